"""Job actions: run a failed job again; the recovery sweep's requeue; the jobs that write
an audit entry of their own (propagation's `propagation.blocked`), through this layer's
sink, since entries are written by actions only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from streams.actions.base import Actor, schedule, system_audit
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job
from streams.jobs import JobRun, job_retry, jobs_to_recover
from streams.memory.propagation import propagation_run
from streams.store import MemoryStore


def do_job_retry(
    *, store: MemoryStore, actor: Actor, job_id: str, agent_ids: frozenset[str] | None = None
) -> Job:
    """Queue a failed job again (Conflict for one that is not failed, NotFound for one
    outside `agent_ids`); the requeue and its entry commit together."""

    def write(tx: ActionTx) -> Job:
        job = job_retry(store=store, job_id=job_id, agent_ids=agent_ids, session=tx.session)
        tx.schedule(job)
        tx.audit(
            action="job.retry",
            object_type="job",
            object_id=job.id,
            agent_id=job.agent_id,
            summary={"kind": job.kind},
        )
        return job

    return run_action(store, actor, write)


def do_jobs_recover(
    *,
    store: MemoryStore,
    now: datetime,
    stale_before: datetime,
    max_attempts: int,
    backoff: Callable[[int], timedelta],
) -> list[Job]:
    """The periodic (and start-up) recovery: dispatch again what needs it, the outbox's
    committed-but-undispatched jobs included (`streams.jobs.jobs_to_recover`). Each
    requeue is one conditional write with nothing else to commit beside it; no person
    acts, so no audit entry (the job's attempts and status are its record)."""
    jobs = jobs_to_recover(
        store=store,
        now=now,
        stale_before=stale_before,
        max_attempts=max_attempts,
        backoff=backoff,
    )
    schedule(jobs)
    return jobs


def do_propagation_run(*, store: MemoryStore, run: JobRun) -> None:
    """The propagation job; its `propagation.blocked` entry (actor `system`) is written
    through the system sink, in the transaction of the block counts."""
    propagation_run(store=store, run=run, audit=system_audit(store, "system"))
