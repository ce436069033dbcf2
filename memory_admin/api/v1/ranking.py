"""`GET` and `PATCH /agents/{id}/ranking`, `/scopes/{id}/ranking`: the lifecycle ranking
switches (recency, MMR, the feedback prior), resolved code < agent < scope, each with
the effect the retrieval benchmark measured (`streams.search.ranking_settings`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema
from pydantic import StrictBool

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import ExternalId, InSchema, error_responses
from memory_admin.stores import get_store
from streams.actions.ranking import do_agent_ranking_update, do_scope_ranking_update
from streams.memory.scopes import scope_get
from streams.search.ranking_settings import MEASURED_ON, resolve_switches, scope_switches
from streams.selectors import agent_get

router = Router(tags=["ranking"])


class RankingIn(InSchema):
    """The switches to change: true, false, or null (inherit again); left out: unchanged."""

    recency: StrictBool | None = Field(None, description="Newer facts gain up to 10 %.")
    mmr: StrictBool | None = Field(None, description="Near-repeats move down the top 10.")
    feedback: StrictBool | None = Field(None, description="Votes move a hit up to 20 %.")


class EffectOut(Schema):
    recall_at_5: float = Field(..., description="Change in recall@5, the switch on alone.")
    mrr: float = Field(..., description="Change in mean reciprocal rank.")


class SwitchOut(Schema):
    name: str
    value: bool = Field(..., description="What search and context use.")
    source: str = Field(..., description="Where the value comes from: code, agent or scope.")
    own: bool | None = Field(..., description="This level's own setting (null: inherits).")
    effect: EffectOut


class RankingOut(Schema):
    switches: list[SwitchOut]
    measured_on: str = Field(..., description="The data the effects were measured on.")


def _out(switches: dict[str, Any]) -> dict[str, Any]:
    return {"switches": list(switches.values()), "measured_on": MEASURED_ON}


@router.get(
    "/agents/{agent_id}/ranking",
    auth=needs("read"),
    response={200: RankingOut, **error_responses(401, 404)},
)
def get_agent_ranking(request: HttpRequest, agent_id: Path[ExternalId]) -> dict[str, Any]:
    require_agent(request, agent_id)
    agent = agent_get(store=get_store(), agent_id=agent_id)
    return _out(resolve_switches(agent_ranking=agent.ranking))


@router.patch(
    "/agents/{agent_id}/ranking",
    auth=needs("write"),
    response={200: RankingOut, **error_responses(400, 401, 404, 422)},
)
def update_agent_ranking(
    request: HttpRequest, agent_id: Path[ExternalId], payload: RankingIn
) -> dict[str, Any]:
    """Set the agent's switches (for every scope that does not set its own), audited."""
    require_agent(request, agent_id)
    agent = do_agent_ranking_update(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        changes=payload.model_dump(exclude_unset=True),
    )
    return _out(resolve_switches(agent_ranking=agent.ranking))


def _scope_out(scope_id: str, request: HttpRequest) -> dict[str, Any]:
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    return _out(scope_switches(store=store, scope=scope))


@router.get(
    "/scopes/{scope_id}/ranking",
    auth=needs("read"),
    response={200: RankingOut, **error_responses(401, 404)},
)
def get_scope_ranking(request: HttpRequest, scope_id: str) -> dict[str, Any]:
    return _scope_out(scope_id, request)


@router.patch(
    "/scopes/{scope_id}/ranking",
    auth=needs("write"),
    response={200: RankingOut, **error_responses(400, 401, 404, 422)},
)
def update_scope_ranking(request: HttpRequest, scope_id: str, payload: RankingIn) -> dict[str, Any]:
    """Set the scope's own switches (over the agent's), audited."""
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    do_scope_ranking_update(
        store=store,
        actor=api_actor(request),
        scope=scope,
        changes=payload.model_dump(exclude_unset=True),
    )
    return _scope_out(scope_id, request)
