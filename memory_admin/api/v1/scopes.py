"""Scopes of an agent: list, explicit creation (groups and collective shards), one scope."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Query, Router, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, require_permission, visible_agents
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
from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import MemoryStore, get_store
from streams.actions.scopes import do_scope_create, do_scope_update
from streams.core.documents import Scope
from streams.core.pagination import Page
from streams.drafts.prompt_checks import draft_refusal
from streams.memory.scopes import ScopeKey, scope_changes_check, scope_get, scope_list, shard_page

router = Router(tags=["scopes"])


@router.get(
    "/agents/{agent_id}/scopes",
    auth=needs("read"),
    response={200: ScopePageOut, **error_responses(401, 404, 422)},
)
def list_scopes(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[ScopeListQuery]
) -> Page[Scope]:
    """The agent's scopes, newest first; an agent nothing is known about has none.
    `shard=NAME` is that one shard (or none), alone: it takes no other filter."""
    require_agent(request, agent_id)
    if filters.shard is not None:
        return shard_page(
            store=get_store(),
            agent_id=agent_id,
            name=filters.shard,
            others=[
                filters.scope_type not in (None, "shard", "collective"),
                filters.user_id,
                filters.group_id,
                filters.q,
                filters.cursor,
            ],
        )
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
    auth=needs("write"),
    response={201: ScopeOut, **error_responses(400, 401, 404, 409, 422)},
)
def create_scope(
    request: HttpRequest, agent_id: Path[ExternalId], payload: ScopeCreateIn
) -> Status[Scope]:
    """Create a group scope or a collective shard; individual scopes come from conversations."""
    require_agent(request, agent_id)
    store = get_store()
    if isinstance(payload, GroupScopeIn):
        scope = do_scope_create(
            store=store,
            actor=api_actor(request),
            key=ScopeKey.group(agent_id, payload.group_id),
            display_name=payload.display_name,
        )
    else:
        scope = do_scope_create(
            store=store,
            actor=api_actor(request),
            key=ScopeKey.collective(agent_id, payload.name),
            extraction_prompt=payload.extraction_prompt,
        )
    return Status(201, scope)


@router.get(
    "/scopes/{scope_id}", auth=needs("read"), response={200: ScopeOut, **error_responses(401, 404)}
)
def get_scope(request: HttpRequest, scope_id: str) -> Scope:
    return scope_get(store=get_store(), scope_id=scope_id, agent_ids=visible_agents(request))


@router.patch(
    "/scopes/{scope_id}",
    auth=needs("write"),
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
    if "review_mode" in changes:  # who may hold shared memory for review decides with it
        require_permission(request, "review")
    text = changes.pop("consolidation", None)
    expected_version = changes.pop("expected_version", None)
    if not changes.pop("save_anyway", False):
        _refuse_regressions(store, scope, changes)
    return do_scope_update(
        store=store,
        actor=api_actor(request),
        scope=scope,
        changes=changes,
        text=text,
        expected_version=expected_version,
    )


CHECKED_PROMPTS = {"consolidation_prompt": "consolidation", "propagation_prompt": "propagation"}


def _refuse_regressions(store: MemoryStore, scope: Scope, changes: dict[str, Any]) -> None:
    """A consolidation or propagation prompt that fails checks of its kind the prompt in
    effect passes is refused (422 naming the field), as the editor asks "Save anyway"."""
    wanted = {name: changes[name] for name in CHECKED_PROMPTS if changes.get(name) is not None}
    if not wanted:
        return
    checked = scope_changes_check(scope=scope, changes=wanted)  # invalid: its own 422 first
    for name, text in checked.items():
        draft_refusal(
            store=store,
            llm=get_llm_provider(),
            scope=scope,
            kind=CHECKED_PROMPTS[name],
            text=text,
            field=name,
        )
