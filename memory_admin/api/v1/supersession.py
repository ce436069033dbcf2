"""Superseded facts (issue 42): a person confirms that a newer observation replaces an
older one, undoes a wrong supersession, or reads the chain. In a shared scope (group,
collective, shard) superseding is a review decision: the key needs `review` too."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_permission, visible_agents
from memory_admin.api.v1.schemas import (
    ObservationOut,
    SupersedeIn,
    SupersessionChainOut,
    error_responses,
)
from memory_admin.stores import get_store
from streams.actions.supersession import do_observation_supersede, do_observation_unsupersede
from streams.core.documents import Observation
from streams.memory.observations import observation_get
from streams.memory.scopes import scope_get
from streams.memory.supersession import supersession_chain

router = Router(tags=["observations"])


@router.post(
    "/observations/{observation_id}/supersede",
    auth=needs("write"),
    response={200: ObservationOut, **error_responses(400, 401, 403, 404, 409, 422)},
)
def supersede_observation(
    request: HttpRequest, observation_id: str, payload: SupersedeIn
) -> Observation:
    """This observation is replaced by `by` (a newer one of the same scope): it gets
    `superseded_by` and `valid_until` and leaves context, search and consolidation. 409
    when either is deleted, superseded already (a chain never loops) or waits for review."""
    store = get_store()
    agents = visible_agents(request)
    older = observation_get(store=store, observation_id=observation_id, agent_ids=agents)
    newer = observation_get(store=store, observation_id=payload.by, agent_ids=agents)
    if scope_get(store=store, scope_id=older.scope_id).scope_type != "individual":
        require_permission(request, "review")
    return do_observation_supersede(store=store, actor=api_actor(request), older=older, newer=newer)


@router.post(
    "/observations/{observation_id}/unsupersede",
    auth=needs("write"),
    response={200: ObservationOut, **error_responses(401, 403, 404, 409)},
)
def unsupersede_observation(request: HttpRequest, observation_id: str) -> Observation:
    """Undo a wrong supersession: current again (pending again unless it was absorbed).
    409 when it is not superseded, or is deleted."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    if scope_get(store=store, scope_id=observation.scope_id).scope_type != "individual":
        require_permission(request, "review")
    return do_observation_unsupersede(
        store=store, actor=api_actor(request), observation=observation
    )


@router.get(
    "/observations/{observation_id}/supersession",
    auth=needs("read"),
    response={200: SupersessionChainOut, **error_responses(401, 404)},
)
def observation_supersession(request: HttpRequest, observation_id: str) -> dict:
    """The chain through this observation, oldest first (each superseded by the next)."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    return {"items": supersession_chain(store=store, observation=observation)}
