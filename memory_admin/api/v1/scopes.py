"""Scopes of an agent: list, explicit creation (groups and collective shards), one scope."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Path, Query, Router, Status

from memory_admin.api.audit_trail import api_audit
from memory_admin.api.auth import actor_name, require_agent, visible_agents
from memory_admin.api.v1.schemas import (
    ExternalId,
    GroupScopeIn,
    ScopeCreateIn,
    ScopeListQuery,
    ScopeOut,
    ScopePageOut,
    ScopePatchIn,
    error_responses,
)
from memory_admin.stores import get_store
from memory_admin.tasks import enqueue_all
from streams.audit import audit_changes
from streams.consolidation import consolidation_edit
from streams.documents import Job, Scope
from streams.exceptions import InvalidInput
from streams.pagination import Page
from streams.scopes import (
    ScopeKey,
    scope_changes_check,
    scope_create,
    scope_get,
    scope_list,
    scope_update,
)

router = Router(tags=["scopes"])


@router.get(
    "/agents/{agent_id}/scopes",
    response={200: ScopePageOut, **error_responses(401, 404, 422)},
)
def list_scopes(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[ScopeListQuery]
) -> Page[Scope]:
    """The agent's scopes, newest first; an agent nothing is known about has none."""
    require_agent(request, agent_id)
    return scope_list(
        store=get_store(),
        agent_id=agent_id,
        scope_type=filters.scope_type,
        user_id=filters.user_id,
        group_id=filters.group_id,
        text=filters.q,
        cursor=filters.cursor,
        limit=filters.limit,
    )


@router.post(
    "/agents/{agent_id}/scopes",
    response={201: ScopeOut, **error_responses(400, 401, 404, 409, 422)},
)
def create_scope(
    request: HttpRequest, agent_id: Path[ExternalId], payload: ScopeCreateIn
) -> Status[Scope]:
    """Create a group scope or a collective shard; individual scopes come from conversations."""
    require_agent(request, agent_id)
    store = get_store()
    if isinstance(payload, GroupScopeIn):
        scope = scope_create(
            store=store,
            key=ScopeKey.group(agent_id, payload.group_id),
            display_name=payload.display_name,
        )
    else:
        scope = scope_create(
            store=store,
            key=ScopeKey.collective(agent_id, payload.name),
            extraction_prompt=payload.extraction_prompt,
            author=actor_name(request),
        )
    api_audit(
        request,
        store=store,
        action="scope.create",
        object_type="scope",
        object_id=scope.id,
        agent_id=agent_id,
        summary={"scope_type": scope.scope_type, "group_id": scope.group_id, "name": scope.name},
    )
    return Status(201, scope)


@router.get("/scopes/{scope_id}", response={200: ScopeOut, **error_responses(401, 404)})
def get_scope(request: HttpRequest, scope_id: str) -> Scope:
    return scope_get(store=get_store(), scope_id=scope_id, agent_ids=visible_agents(request))


@router.patch(
    "/scopes/{scope_id}",
    response={200: ScopeOut, **error_responses(400, 401, 404, 409, 422)},
)
def update_scope(request: HttpRequest, scope_id: str, payload: ScopePatchIn) -> Scope:
    """Change any of the scope's settings and prompts, and hand-edit its consolidation.

    A hand edit carries the `expected_version` it started from; if the scope moved on
    meanwhile the edit is a 409 and nothing in the request is applied.
    """
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    changes = payload.model_dump(exclude_unset=True)
    text = changes.pop("consolidation", None)
    expected_version = changes.pop("expected_version", None)
    if (text is None) != (expected_version is None):
        field = "expected_version" if text is not None else "consolidation"
        raise InvalidInput(
            "a hand edit of the consolidation needs both consolidation and expected_version",
            details=[{"field": field}],
        )
    # Refuse invalid settings before the edit, so a 422 never leaves half a change behind.
    scope_changes_check(scope=scope, changes=changes)
    actor = actor_name(request)
    if text is not None:
        consolidation_edit(
            store=store, scope=scope, text=text, expected_version=expected_version, actor=actor
        )
    jobs: list[Job] = []
    updated = scope_update(store=store, scope=scope, changes=changes, actor=actor, follow_ups=jobs)
    enqueue_all(jobs)
    fields = [*changes, *(["consolidation", "consolidation_version"] if text is not None else [])]
    api_audit(
        request,
        store=store,
        action="consolidation.edit" if text is not None else "scope.update",
        object_type="consolidation" if text is not None else "scope",
        object_id=scope.id,
        agent_id=scope.agent_id,
        summary=audit_changes(
            {f: getattr(scope, f, None) for f in fields},
            {f: getattr(updated, f, None) for f in fields},
        ),
    )
    return updated
