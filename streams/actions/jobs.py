"""Job actions: run a failed job again."""

from __future__ import annotations

from streams.actions.base import Actor, record, schedule
from streams.documents import Job
from streams.jobs import job_retry
from streams.store import MemoryStore


def do_job_retry(
    *, store: MemoryStore, actor: Actor, job_id: str, agent_ids: frozenset[str] | None = None
) -> Job:
    """Queue a failed job again (Conflict for one that is not failed, NotFound for one
    outside `agent_ids`)."""
    job = job_retry(store=store, job_id=job_id, agent_ids=agent_ids)
    record(
        store=store,
        actor=actor,
        action="job.retry",
        object_type="job",
        object_id=job.id,
        agent_id=job.agent_id,
        summary={"kind": job.kind},
    )
    schedule([job])
    return job
