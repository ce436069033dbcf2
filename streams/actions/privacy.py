"""Privacy actions: forget one user of one agent (the export is `streams.actions.exchange`)."""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job
from streams.people.privacy import forget_user_request
from streams.store import MemoryStore


def do_user_forget(*, store: MemoryStore, actor: Actor, agent_id: str, user_id: str) -> Job:
    """Queue the forgetting; the job's result is the deletion receipt."""

    def write(tx: ActionTx) -> Job:
        job = forget_user_request(
            store=store, agent_id=agent_id, user_id=user_id, actor=str(actor), session=tx.session
        )
        tx.schedule(job)
        tx.audit(
            action="user.forget",
            object_type="user",
            object_id=user_id,
            agent_id=agent_id,
            summary={"job_id": job.id},
        )
        return job

    return run_action(store, actor, write)
