"""Consolidation by age: a scope below its threshold is folded once a pending observation
has waited `MEMORY_CONSOLIDATE_AFTER_DAYS` (its kind's days, or the scope's own).

Without it a scope with three pending observations waits forever below a threshold of
ten. The periodic sweep reads the scopes whose oldest pending id (`pending_since`, kept
with `$min` as ids go pending; an ObjectId's first bytes are its creation time) is older
than the fewest days any scope could have, and queues a consolidation for each whose
oldest pending observation is older than its own days. The run is the ordinary one (on
demand, below the threshold), so everything it promises (lease, version check, nothing
lost on failure) holds here too.
A scope with a consolidation queued or running gets no second one; a paused scope none.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bson import ObjectId

from streams.core.documents import Job, Scope, utcnow
from streams.core.exceptions import Conflict
from streams.memory.consolidation_jobs import consolidation_request
from streams.store import MemoryStore

AGE_TRIGGER = "age"
MIN_DAYS = 1  # a scope's own days are at least one (0 is off)
SCOPES_PER_PAGE = 200
MAX_PAGES = 50  # per pass: a backlog is worked through over several passes


def consolidate_after_days(*, store: MemoryStore, scope: Scope) -> int:
    """The scope's days: its own when set, else its kind's (0: never by age)."""
    if scope.consolidate_after_days is not None:
        return scope.consolidate_after_days
    return kind_default_days(store=store, scope=scope)


def kind_default_days(*, store: MemoryStore, scope: Scope) -> int:
    """What MEMORY_CONSOLIDATE_AFTER_DAYS gives the scope's kind (what `null` means)."""
    return store.consolidate_after.for_kind(scope.kind)


def oldest_pending_at(scope: Scope) -> datetime | None:
    """When the scope's oldest pending observation was created (its id's time)."""
    if not scope.pending_observation_ids:
        return None
    return min(ObjectId(i).generation_time for i in scope.pending_observation_ids)


def consolidation_age_due(*, store: MemoryStore, scope: Scope, now: datetime) -> bool:
    """True when a pending observation of the active scope waited longer than its days."""
    days = consolidate_after_days(store=store, scope=scope)
    oldest = oldest_pending_at(scope)
    if days <= 0 or oldest is None or not scope.is_active:
        return False
    return oldest <= now - timedelta(days=days)


def aged_consolidations_sweep(
    *, store: MemoryStore, now: datetime | None = None, page_size: int = SCOPES_PER_PAGE
) -> list[Job]:
    """One pass: a consolidation job (trigger `age`) for each scope whose pending
    observations waited too long; the jobs, for the caller to dispatch."""
    now = now or utcnow()
    before = ObjectId.from_datetime(now - timedelta(days=MIN_DAYS))
    jobs: list[Job] = []
    after: ObjectId | None = None
    for _ in range(MAX_PAGES):
        scopes = store.scopes.pending_older_than(before, after=after, limit=page_size)
        for scope in scopes:
            if not consolidation_age_due(store=store, scope=scope, now=now):
                oldest = oldest_pending_at(scope)
                if oldest is None or oldest >= before.generation_time:
                    # Found by a `pending_since` older than its list (those ids left
                    # pending): made true again, so the next pass does not read it.
                    store.scopes.pending_since_heal(ObjectId(scope.id))
                continue
            if store.jobs.active_for_scope(ObjectId(scope.id), "consolidation") is not None:
                continue  # a run is queued or running: it folds these too
            try:
                job = consolidation_request(
                    store=store, scope=scope, trigger=AGE_TRIGGER, actor=None
                )
            except Conflict:
                continue  # paused or emptied since the page was read: nothing to fold
            jobs.append(job)
        if len(scopes) < page_size:
            break
        after = ObjectId(scopes[-1].id)
    return jobs
