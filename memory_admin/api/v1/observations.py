"""Observations: a scope's log (list, manual additions) and one observation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Body, Field, Query, Router, Schema, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, visible_agents
from memory_admin.api.v1.schemas import (
    ObservationBatchIn,
    ObservationBatchItemOut,
    ObservationBatchOut,
    ObservationFeedbackIn,
    ObservationHistoryOut,
    ObservationListQuery,
    ObservationOut,
    ObservationPageOut,
    ObservationPatchIn,
    ObservationWriteIn,
    PageQuery,
    error_responses,
)
from memory_admin.api.v1.schemas.observations import named_scopes
from memory_admin.stores import MemoryStore, get_store
from streams.actions.observations import (
    do_observation_add,
    do_observation_add_batch,
    do_observation_add_once,
    do_observation_delete,
    do_observation_feedback,
    do_observation_update,
)
from streams.core.documents import Observation, Scope
from streams.core.pagination import Page
from streams.memory.observation_batch import BatchItem
from streams.memory.observation_changes import UNSET
from streams.memory.observations import observation_get, observation_list
from streams.memory.scopes import scope_get
from streams.memory.text_history import EarlierText, observation_history

router = Router(tags=["observations"])


@router.get(
    "/scopes/{scope_id}/observations",
    auth=needs("read"),
    response={200: ObservationPageOut, **error_responses(401, 404, 422)},
)
def list_observations(
    request: HttpRequest, scope_id: str, filters: Query[ObservationListQuery]
) -> Page[Observation]:
    """The scope's observations, newest first; deleted and superseded ones only when asked
    for."""
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    named_scopes(request, [scope])
    return observation_list(
        store=store,
        scope=scope,
        status=filters.status,
        include_deleted=filters.include_deleted,
        include_superseded=filters.include_superseded,
        unused_days=filters.unused_days,
        cursor=filters.cursor,
        limit=filters.limit,
    )


@router.post(
    "/scopes/{scope_id}/observations",
    auth=needs("write"),
    response={
        201: ObservationOut | ObservationBatchOut,
        200: ObservationOut | ObservationBatchOut,
        **error_responses(400, 401, 404, 409, 413, 422),
    },
)
def add_observation(
    request: HttpRequest, scope_id: str, payload: Body[ObservationWriteIn]
) -> Status[Observation] | Status[dict[str, Any]]:
    """An agent's or operator's manual addition; it joins the scope's pending observations.

    A body `{"items": [...]}` adds a batch of up to 500 in one transaction (all or none),
    idempotent by each item's `client_id`: 201 with the items in request order when any
    was stored, 200 when every `client_id` was stored before (a re-send answers the
    same ids). Items with a known `client_id` are not stored again; one audit entry
    (`observation.create_batch`) per batch that stored anything. 409 when a concurrent
    request kept winning the scope's log: re-send it. 409 `forgotten` when the scope's user
    was forgotten (an erasure tombstone covers them): nothing is stored until an admin
    lifts the tombstone.

    The same fact is stored once per scope: an add whose text, normalized (Unicode NFKC,
    case, spacing, punctuation), equals a live observation's answers 200 with that
    observation (a batch item carries `duplicate_of`); `private: true` marks it private.

    A single observation may carry a `client_id` too, so that a retry is safe: 201 when
    it was stored, 200 with the first observation when the `client_id` was stored before.
    """
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    named_scopes(request, [scope])
    if isinstance(payload, ObservationBatchIn):
        return _add_batch(request, store=store, scope=scope, payload=payload)
    if payload.client_id is not None:
        observation, created = do_observation_add_once(
            store=store,
            actor=api_actor(request),
            scope=scope,
            content=payload.content,
            client_id=payload.client_id,
            private=payload.private,
            observed_at=payload.observed_at,
        )
        return Status(201 if created else 200, observation)
    observation = do_observation_add(
        store=store,
        actor=api_actor(request),
        scope=scope,
        content=payload.content,
        private=payload.private,
        observed_at=payload.observed_at,
        expires_at=payload.expires_at,
    )
    return Status(200 if observation.duplicate else 201, observation)


def _add_batch(
    request: HttpRequest, *, store: MemoryStore, scope: Scope, payload: ObservationBatchIn
) -> Status[dict[str, Any]]:
    result = do_observation_add_batch(
        store=store,
        actor=api_actor(request),
        scope=scope,
        items=[
            BatchItem(
                content=item.content,
                client_id=item.client_id,
                private=item.private,
                observed_at=item.observed_at,
                expires_at=item.expires_at,
            )
            for item in payload.items
        ],
    )
    created_ids = [o.id for o, new in zip(result.observations, result.created, strict=True) if new]
    items = [
        ObservationBatchItemOut.model_validate(
            {
                **ObservationOut.model_validate(
                    o, from_attributes=True, context={"request": request}
                ).model_dump(),
                "client_id": client_id,
                "created": new,
                "duplicate_of": duplicate_of,
            }
        )
        for o, client_id, new, duplicate_of in zip(
            result.observations,
            result.client_ids,
            result.created,
            result.duplicate_of,
            strict=True,
        )
    ]
    return Status(201 if created_ids else 200, {"items": items, "created": len(created_ids)})


@router.get(
    "/observations/{observation_id}",
    auth=needs("read"),
    response={200: ObservationOut, **error_responses(401, 404)},
)
def get_observation(request: HttpRequest, observation_id: str) -> Observation:
    """One observation, also a deleted one (`deleted: true`), which is kept for the audit."""
    return observation_get(
        store=get_store(), observation_id=observation_id, agent_ids=visible_agents(request)
    )


@router.get(
    "/observations/{observation_id}/history",
    auth=needs("write"),
    response={200: ObservationHistoryOut, **error_responses(401, 404, 422)},
)
def observation_text_history(
    request: HttpRequest, observation_id: str, page: Query[PageQuery]
) -> Page[EarlierText]:
    """The texts the observation held before each content edit, with who replaced them and
    when, newest first. The audit log keeps only digests; this history is purged with the
    observation (delete, forget user)."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    return observation_history(
        store=store, observation=observation, cursor=page.cursor, limit=page.limit
    )


@router.patch(
    "/observations/{observation_id}",
    auth=needs("write"),
    response={200: ObservationOut, **error_responses(400, 401, 404, 409, 422)},
)
def update_observation(
    request: HttpRequest, observation_id: str, payload: ObservationPatchIn
) -> Observation:
    """Correct the content or mark the observation private (private ones never propagate)."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    updated, _ = do_observation_update(
        store=store,
        actor=api_actor(request),
        observation=observation,
        content=payload.content,
        private=payload.private,
        expires_at=payload.expires_at if "expires_at" in payload.model_fields_set else UNSET,
        reason=payload.reason,
    )
    return updated


class DeleteReason(Schema):
    reason: str | None = Field(None, max_length=500, description="Why it is deleted.")


@router.delete(
    "/observations/{observation_id}",
    auth=needs("write"),
    response={204: None, **error_responses(401, 404, 422)},
)
def delete_observation(
    request: HttpRequest, observation_id: str, reason: Query[DeleteReason]
) -> Status[None]:
    """Soft delete: out of every context, search and default list; deleting twice is fine.
    `?reason=` is kept with the correction the delete records."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    do_observation_delete(
        store=store, actor=api_actor(request), observation=observation, reason=reason.reason
    )
    return Status(204, None)


@router.post(
    "/observations/{observation_id}/feedback",
    auth=needs("read"),
    response={200: ObservationOut, **error_responses(400, 401, 403, 404, 422)},
)
def observation_feedback(
    request: HttpRequest, observation_id: str, payload: ObservationFeedbackIn
) -> Observation:
    """The agent says a retrieved observation was useful (or not). The counts are on the
    observation and weigh in ranking as a bounded prior: no number of votes moves a fact
    by more than its bound. With `context_call_id`, that call's feedback counts once.
    404 for a deleted observation or one of an agent the key does not see."""
    return do_observation_feedback(
        store=get_store(),
        actor=api_actor(request),
        observation_id=observation_id,
        useful=payload.useful,
        context_call_id=payload.context_call_id,
        agent_ids=visible_agents(request),
    )
