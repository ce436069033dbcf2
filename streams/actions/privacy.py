"""Privacy actions: forget one user of one agent (the export is `streams.actions.exchange`)."""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job
from streams.core.exceptions import InvalidInput, NotFound
from streams.people.privacy import forget_user_request
from streams.people.user_audit import check_user_ids
from streams.store import MemoryStore

MAX_REASON = 500


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


def do_tombstone_lift(
    *, store: MemoryStore, actor: Actor, agent_id: str, user_id: str, reason: str
) -> None:
    """Lift a forgotten user's erasure tombstone (admins only; the caller checks), with a
    reason, audited: from then on their data may be stored again. NotFound without one."""
    check_user_ids(agent_id, user_id)
    text = (reason or "").strip()
    if not 1 <= len(text) <= MAX_REASON:
        raise InvalidInput(
            f"reason must be 1..{MAX_REASON} characters", details=[{"field": "reason"}]
        )

    def write(tx: ActionTx) -> None:
        if not store.tombstones.lift(agent_id=agent_id, user_id=user_id, session=tx.session):
            raise NotFound("no erasure tombstone for this user")
        store.scopes.mark_forgotten(agent_id=agent_id, user_id=user_id, at=None, session=tx.session)
        tx.audit(
            action="tombstone.lift",
            object_type="user",
            object_id=user_id,
            agent_id=agent_id,
            summary={"reason": text},
        )

    run_action(store, actor, write)
