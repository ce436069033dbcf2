"""Observations: a scope's log (list, manual additions) and one observation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Body, Query, Router, Status

from memory_admin.api.audit_trail import api_actor, api_audit
from memory_admin.api.auth import visible_agents
from memory_admin.api.v1.schemas import (
    ObservationBatchIn,
    ObservationBatchItemOut,
    ObservationBatchOut,
    ObservationListQuery,
    ObservationOut,
    ObservationPageOut,
    ObservationPatchIn,
    ObservationWriteIn,
    error_responses,
)
from memory_admin.stores import get_store
from memory_admin.tasks import enqueue_all
from streams.audit import audit_changes, content_digest
from streams.documents import Job, Observation, Scope
from streams.observation_batch import BatchItem, observation_batch_add
from streams.observations import (
    observation_add,
    observation_delete,
    observation_get,
    observation_list,
    observation_update,
)
from streams.pagination import Page
from streams.scopes import scope_get
from streams.store import MemoryStore

router = Router(tags=["observations"])


@router.get(
    "/scopes/{scope_id}/observations",
    response={200: ObservationPageOut, **error_responses(401, 404, 422)},
)
def list_observations(
    request: HttpRequest, scope_id: str, filters: Query[ObservationListQuery]
) -> Page[Observation]:
    """The scope's observations, newest first; deleted ones only when asked for."""
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    return observation_list(
        store=store,
        scope=scope,
        status=filters.status,
        include_deleted=filters.include_deleted,
        cursor=filters.cursor,
        limit=filters.limit,
    )


@router.post(
    "/scopes/{scope_id}/observations",
    response={
        201: ObservationOut | ObservationBatchOut,
        200: ObservationBatchOut,
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
    request kept winning the scope's log: re-send it.
    """
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    if isinstance(payload, ObservationBatchIn):
        return _add_batch(request, store=store, scope=scope, payload=payload)
    jobs: list[Job] = []
    observation = observation_add(
        store=store,
        scope=scope,
        content=payload.content,
        private=payload.private,
        observed_at=payload.observed_at,
        follow_ups=jobs,
        actor=api_actor(request),
    )
    enqueue_all(jobs)
    return Status(201, observation)


def _add_batch(
    request: HttpRequest, *, store: MemoryStore, scope: Scope, payload: ObservationBatchIn
) -> Status[dict[str, Any]]:
    jobs: list[Job] = []
    result = observation_batch_add(
        store=store,
        scope=scope,
        items=[
            BatchItem(
                content=item.content,
                client_id=item.client_id,
                private=item.private,
                observed_at=item.observed_at,
            )
            for item in payload.items
        ],
        follow_ups=jobs,
        actor=api_actor(request),
    )
    enqueue_all(jobs)
    created_ids = [o.id for o, new in zip(result.observations, result.created, strict=True) if new]
    items = [
        ObservationBatchItemOut.model_validate(
            {
                **ObservationOut.model_validate(o, from_attributes=True).model_dump(),
                "client_id": client_id,
                "created": new,
            }
        )
        for o, client_id, new in zip(
            result.observations, result.client_ids, result.created, strict=True
        )
    ]
    return Status(201 if created_ids else 200, {"items": items, "created": len(created_ids)})


@router.get(
    "/observations/{observation_id}",
    response={200: ObservationOut, **error_responses(401, 404)},
)
def get_observation(request: HttpRequest, observation_id: str) -> Observation:
    """One observation, also a deleted one (`deleted: true`), which is kept for the audit."""
    return observation_get(
        store=get_store(), observation_id=observation_id, agent_ids=visible_agents(request)
    )


@router.patch(
    "/observations/{observation_id}",
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
    jobs: list[Job] = []
    updated = observation_update(
        store=store,
        observation=observation,
        content=payload.content,
        private=payload.private,
        follow_ups=jobs,
    )
    enqueue_all(jobs)
    api_audit(
        request,
        store=store,
        action="observation.update",
        object_type="observation",
        object_id=observation.id,
        agent_id=observation.agent_id,
        summary=audit_changes(
            {"content": observation.content, "private": observation.private},
            {"content": updated.content, "private": updated.private},
        ),
    )
    return updated


@router.delete(
    "/observations/{observation_id}",
    response={204: None, **error_responses(401, 404)},
)
def delete_observation(request: HttpRequest, observation_id: str) -> Status[None]:
    """Soft delete: out of every context, search and default list; deleting twice is fine."""
    store = get_store()
    observation = observation_get(
        store=store, observation_id=observation_id, agent_ids=visible_agents(request)
    )
    was_deleted = observation.deleted
    jobs: list[Job] = []
    observation_delete(store=store, observation=observation, follow_ups=jobs)
    enqueue_all(jobs)
    api_audit(
        request,
        store=store,
        action="observation.delete",
        object_type="observation",
        object_id=observation.id,
        agent_id=observation.agent_id,
        summary={"content": content_digest(observation.content), "already_deleted": was_deleted},
    )
    return Status(204, None)
