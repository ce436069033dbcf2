"""Review of shared memory: an agent's queue, one decision, and decisions in bulk.

Permissions (for the key-permissions work): listing the queue needs `read`; a
decision (single or bulk) and a scope's `review_mode` need `review`.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Body, Query, Router

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import (
    DecidedPageOut,
    ObservationOut,
    ObservationPageOut,
    PageQuery,
    ReviewBulkIn,
    ReviewBulkOut,
    ReviewDecisionIn,
    ReviewQueueQuery,
    error_responses,
)
from memory_admin.stores import get_store
from streams.actions.review import do_review_decide, do_review_decide_bulk, do_review_undo
from streams.core.documents import Observation
from streams.core.exceptions import NotFound
from streams.core.pagination import Page
from streams.guard.review import review_queue
from streams.memory.observations import observation_get
from streams.memory.review_undo import DecidedItem, review_decided
from streams.memory.scopes import scope_get

router = Router(tags=["review"])


@router.get(
    "/agents/{agent_id}/review",
    auth=needs("read"),
    response={200: ObservationPageOut, **error_responses(401, 404, 422)},
)
def list_review_queue(
    request: HttpRequest, agent_id: str, filters: Query[ReviewQueueQuery]
) -> Page[Observation]:
    """What waits for a person (`in_review`) or for more groups (`candidate`), oldest
    first; `scope_id` narrows to one scope, `reason` to one reason (e.g. `flag:secret`)."""
    require_agent(request, agent_id)
    store = get_store()
    if filters.scope_id is not None:
        scope = scope_get(store=store, scope_id=filters.scope_id, agent_ids=visible_agents(request))
        if scope.agent_id != agent_id:
            raise NotFound("scope not found")
    return review_queue(
        store=store,
        agent_id=agent_id,
        status=filters.status,
        scope_id=filters.scope_id,
        reason=filters.reason,
        cursor=filters.cursor,
        limit=filters.limit,
    )


@router.post(
    "/observations/{observation_id}/review",
    auth=needs("review"),
    response={200: ObservationOut, **error_responses(400, 401, 403, 404, 409, 422)},
)
def decide(
    request: HttpRequest, observation_id: str, payload: Body[ReviewDecisionIn]
) -> Observation:
    """Approve (it becomes `pending`; `content` approves an edited text) or reject (it
    becomes `rejected`, kept for the audit and used nowhere), with an optional note.
    409 `not_in_review` when it is not waiting (any more): of two deciders one wins."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    return do_review_decide(
        store=store,
        actor=api_actor(request),
        observation=observation,
        decision=payload.decision,
        content=payload.content,
        note=payload.note,
    )


@router.post(
    "/agents/{agent_id}/review/decisions",
    auth=needs("review"),
    response={200: ReviewBulkOut, **error_responses(400, 401, 403, 404, 413, 422)},
)
def decide_bulk(request: HttpRequest, agent_id: str, payload: Body[ReviewBulkIn]) -> dict[str, Any]:
    """One decision for up to 500 of the agent's waiting observations; ids that are unknown,
    of another agent or not waiting are listed in `skipped`, the rest apply."""
    require_agent(request, agent_id)
    result = do_review_decide_bulk(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        ids=payload.ids,
        decision=payload.decision,
        note=payload.note,
    )
    return {"approved": result.approved, "rejected": result.rejected, "skipped": result.skipped}


@router.get(
    "/agents/{agent_id}/review/decided",
    auth=needs("read"),
    response={200: DecidedPageOut, **error_responses(401, 404, 422)},
)
def list_decided(request: HttpRequest, agent_id: str, page: Query[PageQuery]) -> Page[DecidedItem]:
    """What a person decided (approved or rejected, not undone), newest decision first,
    each with `undo_until` while the decision can still be taken back."""
    require_agent(request, agent_id)
    return review_decided(
        store=get_store(), agent_ids=[agent_id], cursor=page.cursor, limit=page.limit
    )


@router.post(
    "/observations/{observation_id}/review/undo",
    auth=needs("review"),
    response={200: ObservationOut, **error_responses(401, 403, 404, 409)},
)
def undo(request: HttpRequest, observation_id: str) -> Observation:
    """Take a decision back within `MEMORY_REVIEW_UNDO_SECONDS` (default 600): the
    observation waits for review again with its reasons; an approval's pending entry and
    search postings leave with it. 409 `undo_expired` after the window, 409
    `undo_unavailable` when it was not decided, was consolidated since, or was approved
    with an edited text."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    return do_review_undo(store=store, actor=api_actor(request), observation=observation)
