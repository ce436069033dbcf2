"""When a scope's consolidation is queued: on demand, or once its pending list is due.

Apart from the runs (`streams.memory.consolidation_runs`) so that committing a version
(`streams.memory.consolidation`), which may make the next run due, and the run, which commits,
do not import each other.
"""

from __future__ import annotations

from bson import ObjectId

from streams.core.documents import Job, Scope
from streams.core.exceptions import Conflict
from streams.jobs import job_create
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch


def consolidation_request(
    *,
    store: MemoryStore,
    scope: Scope,
    trigger: str,
    actor: str | None,
    session: StoreSession | None = None,
) -> Job:
    """Consolidate now (on demand): runs even below the threshold; Conflict if nothing is pending.

    A run already queued or running for the scope is returned instead of a second one.
    With `session`, the job is written in the caller's transaction.
    """
    if not scope.pending_observation_ids:
        raise Conflict("nothing to consolidate: the scope has no pending observations")
    if not scope.is_active:
        raise Conflict("the scope is paused: resume it to consolidate")
    active = store.jobs.active_for_scope(ObjectId(scope.id), "consolidation", session=session)
    return active or _consolidation_job(store, scope, trigger=trigger, actor=actor, session=session)


def consolidation_due(
    *, store: MemoryStore, scope_id: str, trigger: str, session: StoreSession | None = None
) -> Job | None:
    """A consolidation job when the scope's pending list reached its threshold, else None
    (with `session`, read and written in the caller's transaction)."""
    scope = store.scopes.get(ObjectId(scope_id), session=session)
    if scope is None:
        return None
    return consolidation_due_at(
        store=store,
        scope=scope,
        pending_count=scope.pending_count,
        trigger=trigger,
        session=session,
    )


def consolidation_due_at(
    *,
    store: MemoryStore,
    scope: Scope,
    pending_count: int,
    trigger: str,
    session: StoreSession | None = None,
    writes: WriteBatch | None = None,
) -> Job | None:
    """`consolidation_due` for a caller that knows the pending count without reading the
    scope again: an add's transaction claimed the scope at the version it had read, so
    that scope's count plus the add's is exact as of the add's commit. With `writes`, the
    job joins the add's batch (written at its flush, in its transaction)."""
    if not scope.is_active or pending_count < scope.consolidation_threshold:
        return None
    active = store.jobs.active_for_scope(ObjectId(scope.id), "consolidation", session=session)
    if active is not None:
        return None
    return _consolidation_job(
        store, scope, trigger=trigger, actor=None, session=session, writes=writes
    )


def _consolidation_job(
    store: MemoryStore,
    scope: Scope,
    *,
    trigger: str,
    actor: str | None,
    session: StoreSession | None = None,
    writes: WriteBatch | None = None,
) -> Job:
    return job_create(
        store=store,
        kind="consolidation",
        agent_id=scope.agent_id,
        scope_id=scope.id,
        trigger=trigger,
        actor=actor,
        session=session,
        writes=writes,
    )
