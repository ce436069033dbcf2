"""A scope's consolidation: its history, restoring a version, "consolidate now" and its
estimate (chunks, tokens and cost, before it runs)."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, visible_agents
from memory_admin.api.v1.schemas import (
    ConsolidateOut,
    ConsolidationEstimateOut,
    ConsolidationPageOut,
    ConsolidationVersionOut,
    PageQuery,
    error_responses,
)
from memory_admin.integrations.llm import scope_consolidation_estimate
from memory_admin.stores import get_store
from streams.actions.consolidations import do_consolidation_restore, do_consolidation_trigger
from streams.core.documents import ConsolidationVersion
from streams.core.pagination import Page
from streams.memory.consolidation import consolidation_history
from streams.memory.scopes import scope_get

router = Router(tags=["consolidations"])

# A version the store can hold (BSON int64); an unknown one is a 404.
VersionNumber = Annotated[int, Field(ge=0, le=2**62)]


@router.get(
    "/scopes/{scope_id}/consolidations",
    auth=needs("read"),
    response={200: ConsolidationPageOut, **error_responses(401, 404, 422)},
)
def list_consolidations(
    request: HttpRequest, scope_id: str, page: Query[PageQuery]
) -> Page[ConsolidationVersion]:
    """Every version of the scope's consolidation, newest first."""
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    return consolidation_history(store=store, scope=scope, cursor=page.cursor, limit=page.limit)


@router.post(
    "/scopes/{scope_id}/consolidations/{version}/restore",
    auth=needs("write"),
    response={201: ConsolidationVersionOut, **error_responses(401, 404, 409, 422)},
)
def restore_consolidation(
    request: HttpRequest, scope_id: str, version: Path[VersionNumber]
) -> Status[ConsolidationVersion]:
    """A new version whose text is that of `version`; the history keeps both."""
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    entry = do_consolidation_restore(
        store=store, actor=api_actor(request), scope=scope, version=version
    )
    return Status(201, entry)


@router.get(
    "/scopes/{scope_id}/consolidation-estimate",
    auth=needs("read"),
    response={200: ConsolidationEstimateOut, **error_responses(401, 404)},
)
def consolidation_estimate(request: HttpRequest, scope_id: str) -> dict[str, object]:
    """What "consolidate now" would cost: chunks × prompt tokens of the pending set, the
    model and its price (estimated from the prompts' length; no model is called)."""
    scope = scope_get(store=get_store(), scope_id=scope_id, agent_ids=visible_agents(request))
    return scope_consolidation_estimate(scope).to_dict()


@router.post(
    "/scopes/{scope_id}/consolidate",
    auth=needs("write"),
    response={202: ConsolidateOut, **error_responses(401, 404, 409)},
)
def consolidate_scope(request: HttpRequest, scope_id: str) -> Status[dict[str, object]]:
    """Consolidate now, even below the threshold; 409 if nothing is pending. The answer
    carries the run's estimate (`GET .../consolidation-estimate` gives it beforehand)."""
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    estimate = scope_consolidation_estimate(scope).to_dict()
    job = do_consolidation_trigger(store=store, actor=api_actor(request), scope=scope)
    return Status(202, {"job_id": job.id, "estimate": estimate})
