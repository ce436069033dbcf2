"""One transaction per action: its change, its audit entry and its jobs commit together.

An action runs its writes inside `run_action(store, actor, work)`: `work(tx)` writes
with `tx.session`, records its audit entry with `tx.audit(...)` and its follow-up jobs
with `tx.enqueue(job)` (a job the action built) or `tx.schedule(job)` (a job a service
wrote with `session=tx.session`). All of it commits in one store transaction; only
then are the jobs handed to the runner. A job document is the outbox entry: one that
committed but was never dispatched (the process died in between) stays `queued`, and
the recovery sweep (`memory_admin.tasks.retry_failed_jobs`, every 15 s under beat or the
in-process scheduler) dispatches it once it is MEMORY_JOB_STALE_SECONDS old. So a crash
leaves the change, its entry and its jobs all, or none.

`fault_point` lets a test stop a process at a named point (MEMORY_FAULT_PAUSE) and kill it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from streams.actions.base import Actor, record, schedule
from streams.core.documents import Job
from streams.records.audit import AuditSink
from streams.records.corrections import Correction, correction_record
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

T = TypeVar("T")
FAULT_ENV = "MEMORY_FAULT_PAUSE"  # tests only: the fault point a process stops at


@dataclass
class ActionTx:
    """What one attempt of an action's transaction writes besides its change."""

    store: MemoryStore
    actor: Actor
    session: StoreSession
    # Dispatched after the commit: a service that writes jobs with `session=tx.session`
    # may take this as its `follow_ups` (each job once) instead of `schedule`-ing them.
    jobs: list[Job] = field(default_factory=list)
    audited: int = 0

    def audit(
        self,
        *,
        action: str,
        object_type: str,
        object_id: str | None,
        agent_id: str | None = None,
        summary: dict[str, Any] | None = None,
        at: datetime | None = None,
        session: StoreSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None:
        """The action's audit entry, written in its transaction (an `AuditSink`: a
        service the action runs hands its entry here; `session`, when given, is this
        transaction's, and `writes` a batch of writes in it)."""
        if session is not None and session is not self.session:
            raise RuntimeError("an action's audit entry goes in the action's transaction")
        record(
            store=self.store,
            actor=self.actor,
            action=action,
            object_type=object_type,
            object_id=object_id,
            agent_id=agent_id,
            summary=summary,
            session=self.session,
            at=at,
            writes=writes,
        )
        self.audited += 1

    def correct(self, corrections: list[Correction]) -> None:
        """The action's corrections (`streams.records.corrections`), in its transaction."""
        correction_record(store=self.store, corrections=corrections, session=self.session)

    def enqueue(self, job: Job) -> Job:
        """Write a job the action built (queued) in the transaction; dispatched after commit."""
        self.store.jobs.insert(job, session=self.session)
        self._dispatch_after_commit(job)
        return job

    def schedule(self, job: Job | None) -> Job | None:
        """Dispatch after commit a job a service wrote with `session=tx.session`."""
        if job is not None:
            self._dispatch_after_commit(job)
        return job

    def _dispatch_after_commit(self, job: Job) -> None:
        if all(j.id != job.id for j in self.jobs):
            self.jobs.append(job)


def run_action(
    store: MemoryStore,
    actor: Actor,
    work: Callable[[ActionTx], T],
    *,
    attempts: int = 1,
    follow_ups: list[Job] | None = None,
) -> T:
    """Run `work` in one transaction (retried whole on a transient conflict, and on
    `Conflict` up to `attempts`), then hand its jobs to the runner, or to `follow_ups`
    when the action runs inside a job (they go out once that job is done)."""
    done: list[ActionTx] = []

    def attempt(session: StoreSession) -> T:
        tx = ActionTx(store=store, actor=actor, session=session)
        result = work(tx)
        fault_point("action.before_commit")
        done.append(tx)
        return result

    result = store.in_transaction(attempt, attempts=attempts)
    jobs = done[-1].jobs
    fault_point("action.before_dispatch")  # committed: every job is a queued document
    if follow_ups is not None:
        follow_ups.extend(jobs)
    else:
        schedule(jobs)
    return result


def action_transaction(
    store: MemoryStore, actor: Actor
) -> Callable[[Callable[[StoreSession, Callable[[Job | None], object], AuditSink], T], int], T]:
    """For a service that runs its own transaction (an add: `streams.memory.observations.
    Transact`): that transaction as this action's `run_action`, the service's writes,
    audit entry (handed to `ActionTx.audit`) and jobs (`ActionTx.schedule`, dispatched
    after the commit) all in it."""

    def transact(
        work: Callable[[StoreSession, Callable[[Job | None], object], AuditSink], T], n: int
    ) -> T:
        return run_action(
            store, actor, lambda tx: work(tx.session, tx.schedule, tx.audit), attempts=n
        )

    return transact


def fault_point(name: str) -> None:
    """Stop here for good when MEMORY_FAULT_PAUSE names this point (a test then kills the
    process); says so on stderr first. Without the variable it costs one lookup."""
    if os.environ.get(FAULT_ENV) != name:
        return
    sys.stderr.write(f"fault point {name}\n")
    sys.stderr.flush()
    while True:
        time.sleep(60)
