"""Consolidation actions: consolidate now, restore a version, edit the text by hand.

All three name the scope as their object (`object_id` is the scope id); restore and
edit change the consolidation (`object_type` "consolidation"), "consolidate now"
queues a run of the scope (`object_type` "scope").
"""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import ConsolidationVersion, Job, Scope
from streams.memory.consolidation import consolidation_restore
from streams.memory.consolidation_jobs import consolidation_request
from streams.records.audit import audit_change
from streams.store import MemoryStore


def do_consolidation_trigger(*, store: MemoryStore, actor: Actor, scope: Scope) -> Job:
    """Queue a consolidation run even below the threshold (Conflict if nothing is pending)."""

    def write(tx: ActionTx) -> Job:
        job = consolidation_request(
            store=store, scope=scope, trigger=actor.kind, actor=str(actor), session=tx.session
        )
        tx.schedule(job)
        tx.audit(
            action="consolidation.trigger",
            object_type="scope",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={"job_id": job.id},
        )
        return job

    return run_action(store, actor, write)


def do_consolidation_restore(
    *, store: MemoryStore, actor: Actor, scope: Scope, version: int
) -> ConsolidationVersion:
    """A new version whose text is that of `version`; the history keeps both. The version,
    the observations back to pending, the entry and the threshold's job commit together."""

    def write(tx: ActionTx) -> ConsolidationVersion:
        entry = consolidation_restore(
            store=store,
            scope=scope,
            version=version,
            actor=str(actor),
            follow_ups=tx.jobs,
            session=tx.session,
        )
        tx.audit(
            action="consolidation.restore",
            object_type="consolidation",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={
                "restored_version": version,
                "consolidation_version": audit_change(scope.consolidation_version, entry.version),
            },
        )
        return entry

    return run_action(store, actor, write)
