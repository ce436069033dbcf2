"""Unused memory: per scope, how many live observations no context or search retrieved in
the last N days (and that are older than that: a fact stored yesterday has had no chance).

Retrieval is recorded on the observation (`access_count`, `last_accessed_at`, written
behind by `streams.store.access_log`), so the report is one count per scope over the
scope's log, a page of scopes at a time. The same cut is the bulk filter `unused_days`
(`streams.memory.bulk.unused_query`), so a report's count is what a bulk action on that
scope with that filter matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId

from streams.core.documents import Scope, utcnow
from streams.core.exceptions import NotFound
from streams.core.pagination import Page
from streams.memory.bulk import unused_days_check, unused_query
from streams.memory.scopes import scope_list
from streams.store import MemoryStore

DEFAULT_UNUSED_DAYS = 30


@dataclass(frozen=True)
class UnusedScope:
    """One scope's row of the report."""

    scope: Scope
    unused: int  # live observations not retrieved in `days` (and older than that)
    observations: int  # live observations in all


def unused_report(
    *,
    store: MemoryStore,
    agent_id: str,
    days: int,
    cursor: str | None = None,
    limit: int | None = None,
    now: datetime | None = None,
) -> Page[UnusedScope]:
    """A page of the agent's scopes (newest first), each with its unused count."""
    unused_days_check(days)
    if store.agents.get(agent_id) is None:
        raise NotFound("agent not found")
    page = scope_list(store=store, agent_id=agent_id, cursor=cursor, limit=limit)
    live = {"deleted_at": None, "review_status": None}
    cut = unused_query(days=days, now=now or utcnow())
    rows = [
        UnusedScope(
            scope=scope,
            unused=store.bulk.scope_count(ObjectId(scope.id), extra={**live, **cut}),
            observations=scope.observation_count,
        )
        for scope in page.items
    ]
    return Page(items=rows, next_cursor=page.next_cursor)
