"""What every add writes after its append, in its own transaction: the audit entry, the
agent's counters and the threshold's consolidation job.

A single add (`streams.memory.observations.observation_add`), a keyed one and a batch
(`streams.memory.observation_batch`) wrote the same tail each in its own words; one
function keeps them from drifting apart (the audit entry of each is the durable record
of the write, so it must commit with it, whichever path wrote it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from streams.core.documents import Job, Observation, Scope
from streams.memory.consolidation_jobs import consolidation_due_at
from streams.records.activity import activity_record
from streams.records.audit import AuditSink, content_digest
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

APPEND_ATTEMPTS = 5
# An add's transaction: `work(session, schedule, audit)` writes, hands `schedule` the job it
# wrote there (or None), to be dispatched once committed, and `audit` its entry (None: no
# action runs it, so no entry). `Transact(work, attempts)` runs it: alone, in
# `store.in_transaction` (the jobs then go to the caller's `follow_ups`); an action passes
# its own (`streams.actions.tx.action_transaction`): the add is then the action's one
# transaction, its jobs the action's (`ActionTx.schedule`) and its entry the action's
# (`ActionTx.audit`), no command more.
Schedule = Callable[[Job | None], object]
Work = Callable[[StoreSession, Schedule, AuditSink | None], Any]
Transact = Callable[[Work, int], Any]


def added(
    *,
    store: MemoryStore,
    audit: AuditSink | None,
    scope: Scope,
    before: Scope | None,
    fresh: list[Observation],
    now: datetime,
    session: StoreSession,
    schedule: Schedule,
    writes: WriteBatch | None = None,
    items: int | None = None,
    duplicates: int = 0,
    **extra: Any,
) -> None:
    """After an append stored `fresh` (none: it wrote nothing, and neither does this):
    with `audit` (the action's sink) its audit entry (`record_added`), the agent's
    counters, and the job when the append filled the pending list up to the threshold
    (`before`: the scope as the append found it); then `writes` goes to the store, one
    round trip for all of it."""
    if fresh:
        if audit is not None:
            record_added(
                audit=audit,
                scope=scope,
                fresh=fresh,
                now=now,
                session=session,
                writes=writes,
                items=items,
                duplicates=duplicates,
                **extra,
            )
        counters_add(
            store=store,
            agent_id=scope.agent_id,
            added=len(fresh),
            now=now,
            session=session,
            writes=writes,
        )
        # Held observations (in review, candidates) are not pending: they fill no threshold.
        new = sum(1 for o in fresh if not o.held)
        if new and before is not None:
            schedule(
                threshold_job(store=store, before=before, added=new, session=session, writes=writes)
            )
    if writes is not None:
        writes.flush()


def record_added(
    *,
    audit: AuditSink,
    scope: Scope,
    fresh: list[Observation],
    now: datetime,
    session: StoreSession,
    writes: WriteBatch | None = None,
    items: int | None = None,
    duplicates: int = 0,
    **extra: Any,
) -> None:
    """An add's audit entry, in its transaction, digests and counts only: a single add's
    `observation.create`, or with `items` (how many a batch held) the batch's one
    `observation.create_batch`; `extra` adds to its summary (e.g. the caller's `client_id`)."""
    if items is None:
        (observation,) = fresh
        action, object_type, object_id = "observation.create", "observation", observation.id
        summary: dict[str, Any] = {
            "scope_id": scope.id,
            "content": content_digest(observation.content),
            "private": observation.private,
            "flags": observation.flags,
            "status": observation.status,
        }
    else:
        action, object_type, object_id = "observation.create_batch", "scope", scope.id
        summary = {
            "scope_id": scope.id,
            "items": items,
            "created": len(fresh),
            "duplicates": duplicates,
            "private": sum(1 for o in fresh if o.private),
            "in_review": sum(1 for o in fresh if o.held),
            "observation_ids": [o.id for o in fresh],
        }
    audit(
        action=action,
        object_type=object_type,
        object_id=object_id,
        agent_id=scope.agent_id,
        summary={**summary, **extra},
        at=now,
        session=session,
        writes=writes,
    )


def counters_add(
    *,
    store: MemoryStore,
    agent_id: str,
    added: int,
    now: datetime,
    session: StoreSession,
    writes: WriteBatch | None = None,
) -> None:
    """The agent's counters and its day's count, inside a short add's transaction, on this
    thread's counter shards (`streams.store.counter_shards`): concurrent adds for one agent
    write different documents, so they do not conflict."""
    store.agents.adjust_counters(
        agent_id,
        now=now,
        observations=added,
        pending=added,
        session=session,
        writes=writes,
        sharded=True,
    )
    activity_record(
        store=store,
        agent_id=agent_id,
        now=now,
        observations=added,
        session=session,
        writes=writes,
        sharded=True,
    )


def threshold_job(
    *,
    store: MemoryStore,
    before: Scope,
    added: int,
    session: StoreSession,
    writes: WriteBatch | None = None,
) -> Job | None:
    """Within the add's transaction: the consolidation job when the add filled the pending
    list up to the threshold, written with the add (in `writes` where there is a batch),
    so a crash after the commit leaves it `queued` for the recovery sweep instead of lost.
    Below the threshold (almost every add) no further read. At or above it (every add
    while a run is queued or running) one read: whether a run is active, in the add's
    snapshot; a concurrent add that queued one first moved the scope's log on, so this
    add's claim (sent at once, or in its batch) misses, and the retry sees its job. The
    scope is not read again: the claim was at `before`'s version, so `before`'s pending
    count plus `added` is what the commit leaves. The caller dispatches the job once committed."""
    pending = before.pending_count + added
    if pending < before.consolidation_threshold:
        return None
    return consolidation_due_at(
        store=store,
        scope=before,
        pending_count=pending,
        trigger="threshold",
        session=session,
        writes=writes,
    )


def add_transaction(
    store: MemoryStore,
    transact: Transact | None,
    work: Work,
    follow_ups: list[Job] | None,
) -> Any:
    """Run an add's `work` through `transact`, or in a transaction of its own whose jobs
    (those of the attempt that committed) go to `follow_ups` (and that no action audits);
    retried whole while its claim of the scope's log misses."""
    if transact is not None:
        return transact(work, APPEND_ATTEMPTS)
    jobs: list[Job] = []

    def keep(job: Job | None) -> None:
        if job is not None:
            jobs.append(job)

    def attempt(session: StoreSession) -> Any:
        jobs.clear()
        return work(session, keep, None)

    result = store.in_transaction(attempt, attempts=APPEND_ATTEMPTS)
    if follow_ups is not None:
        follow_ups.extend(jobs)
    return result
