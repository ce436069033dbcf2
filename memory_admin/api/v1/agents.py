"""`GET` and `PATCH /agents/{agent_id}`: an agent's counts and its settings.

Settings: the chat proxy's memory tool (`memory_tool`: `off`, or `search_memory` to
offer the model that function tool; `docs/chat-proxy.md`); limits and models
(`extraction_model`, and `scope_defaults` by scope type; `docs/limits-and-models.md`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, InSchema, error_responses
from memory_admin.api.v1.schemas.limits import (
    MODEL_HELP,
    InEffectOut,
    ItemCap,
    ItemWords,
    LimitsOut,
    ModelName,
    in_effect_out,
    limits_out,
)
from memory_admin.stores import MemoryStore, get_store
from streams.actions.agent_limits import do_agent_limits_update
from streams.actions.agents import do_agent_update
from streams.core.documents import Agent
from streams.core.exceptions import InvalidInput
from streams.memory.scope_limits import agent_limits, extraction_model
from streams.selectors import agent_get

MemoryTool = Literal["off", "search_memory"]


class AgentInEffectOut(Schema):
    extraction_model: InEffectOut
    scope_types: dict[str, LimitsOut] = Field(
        description="By scope type (individual, group, collective, shard): each value in "
        "effect for a scope that sets nothing itself, and its level (code or agent)"
    )


class AgentOut(Schema):
    id: str
    scope_count: int
    observation_count: int
    pending_count: int
    created_at: datetime
    last_activity_at: datetime
    memory_tool: MemoryTool
    extraction_model: str | None = Field(description="null: the code's (MEMORY_LLM_MODEL_FAST)")
    scope_defaults: dict[str, dict[str, Any]] = Field(
        description="What the agent's scopes of each type take when they set nothing: "
        "{scope type: {item_words, item_cap, consolidation_model, propagation_model}}"
    )
    in_effect: AgentInEffectOut


class KindDefaultsIn(InSchema):
    """One scope type's defaults; a null removes that default (the code's applies)."""

    item_words: ItemWords | None = None
    item_cap: ItemCap | None = None
    consolidation_model: ModelName | None = Field(None, description=MODEL_HELP)
    propagation_model: ModelName | None = Field(None, description=MODEL_HELP)


class ScopeDefaultsIn(InSchema):
    individual: KindDefaultsIn | None = None
    group: KindDefaultsIn | None = None
    collective: KindDefaultsIn | None = None
    shard: KindDefaultsIn | None = None


class AgentPatchIn(InSchema):
    """Only the fields sent change."""

    memory_tool: MemoryTool = None  # type: ignore[assignment]  # may be left out, never null
    extraction_model: ModelName | None = Field(
        None, description="The model of the agent's extraction calls; null: the code's."
    )
    scope_defaults: ScopeDefaultsIn = Field(  # type: ignore[assignment]
        None,
        description="Merged into the agent's defaults by scope type (a null field removes one).",
    )


router = Router(tags=["agents"])


@router.get(
    "/agents/{agent_id}",
    auth=needs("read"),
    response={200: AgentOut, **error_responses(401, 404)},
)
def get_agent(request: HttpRequest, agent_id: Path[ExternalId]) -> dict[str, Any]:
    require_agent(request, agent_id)
    store = get_store()
    return _agent_out(store, agent_get(store=store, agent_id=agent_id))


@router.patch(
    "/agents/{agent_id}",
    auth=needs("write"),
    response={200: AgentOut, **error_responses(400, 401, 404, 422)},
)
def update_agent(
    request: HttpRequest, agent_id: Path[ExternalId], payload: AgentPatchIn
) -> dict[str, Any]:
    """Change the agent's settings: `memory_tool` (`off` | `search_memory`), its
    `extraction_model` and its `scope_defaults` by scope type; each audited."""
    require_agent(request, agent_id)
    store = get_store()
    changes = payload.model_dump(exclude_unset=True)
    if not changes:
        raise InvalidInput(
            "send at least one of memory_tool, extraction_model, scope_defaults",
            details=[{"field": "memory_tool"}],
        )
    agent = agent_get(store=store, agent_id=agent_id)
    if "memory_tool" in changes:
        agent = do_agent_update(
            store=store,
            actor=api_actor(request),
            agent_id=agent_id,
            memory_tool=changes["memory_tool"],
        )
    limits = {k: changes[k] for k in ("extraction_model", "scope_defaults") if k in changes}
    if limits:
        if "scope_defaults" in limits:  # only the fields sent: a null removes a default
            sent = limits["scope_defaults"] or {}
            limits["scope_defaults"] = {k: v for k, v in sent.items() if v is not None}
        agent = do_agent_limits_update(
            store=store, actor=api_actor(request), agent_id=agent_id, **limits
        )
    return _agent_out(store, agent)


def _agent_out(store: MemoryStore, agent: Agent) -> dict[str, Any]:
    """The agent with its settings, and the limits and models in effect by scope type."""
    return {
        **{name: getattr(agent, name) for name in AgentOut.model_fields if name != "in_effect"},
        "in_effect": {
            "extraction_model": in_effect_out(extraction_model(store=store, agent=agent)),
            "scope_types": {
                kind: limits_out(limits)
                for kind, limits in agent_limits(store=store, agent=agent).items()
            },
        },
    }
