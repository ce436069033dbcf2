"""`do_memory_rescan`: the detectors run again over stored memory, as one audited run.

Each batch commits its changes with the checkpoint that moves past them (one
transaction: `run_action`); the batch that finishes the run writes the run's one audit
entry (`memory.rescan`, its counts summed over every batch, resumed ones included) and
drops the checkpoint, in the same transaction. A dry run writes nothing but that entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import utcnow
from streams.memory.rescan import RescanCounts, rescan_batch
from streams.store import MemoryStore

CHECKPOINT = "detectors"
DEFAULT_BATCH = 200


@dataclass(frozen=True)
class RescanReport:
    run_id: str
    counts: RescanCounts
    done: bool  # False: stopped after `max_batches`; run it again to go on
    resumed: bool  # it went on from a checkpoint an earlier, unfinished run left
    dry_run: bool
    batches: int


def do_memory_rescan(
    *,
    store: MemoryStore,
    actor: Actor,
    batch_size: int = DEFAULT_BATCH,
    dry_run: bool = False,
    max_batches: int | None = None,
    before_commit: Callable[[int], None] | None = None,
) -> RescanReport:
    """Rescan observations, then consolidations, `batch_size` at a time, from the
    checkpoint an unfinished run left. `max_batches` stops early (the checkpoint stays);
    `before_commit(n)` is called inside batch n's transaction (tests stop a run there)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if dry_run:
        return _dry_run(store=store, actor=actor, batch_size=batch_size)
    saved = store.rescans.checkpoint(CHECKPOINT)
    resumed = saved is not None
    run_id = str(saved["run_id"]) if saved else str(ObjectId())
    phase = saved["phase"] if saved else "observations"
    after = saved.get("after") if saved else None
    counts = RescanCounts.from_dict(saved.get("counts") if saved else None)
    started_at = saved["started_at"] if saved else utcnow()
    batches = 0
    while phase != "done" and (max_batches is None or batches < max_batches):
        step = _Batch(
            store=store,
            run_id=run_id,
            phase=phase,
            after=after,
            counts=counts,
            batch_size=batch_size,
            number=batches + 1,
            resumed=resumed,
            started_at=started_at,
            before_commit=before_commit,
        )
        phase, after, counts = run_action(store, actor, step.write)
        batches += 1
    return RescanReport(run_id, counts, phase == "done", resumed, False, batches)


@dataclass(frozen=True)
class _Batch:
    """One batch of a run: its changes and the checkpoint past them, in one transaction."""

    store: MemoryStore
    run_id: str
    phase: str
    after: ObjectId | None
    counts: RescanCounts  # before this batch
    batch_size: int
    number: int
    resumed: bool
    started_at: datetime
    before_commit: Callable[[int], None] | None

    def write(self, tx: ActionTx) -> tuple[str, ObjectId | None, RescanCounts]:
        counts = RescanCounts.from_dict(self.counts.to_dict())  # a retried attempt restarts
        phase, after = rescan_batch(
            store=self.store,
            phase=self.phase,
            after=self.after,
            limit=self.batch_size,
            counts=counts,
            session=tx.session,
            dry_run=False,
        )
        if self.before_commit is not None:
            self.before_commit(self.number)
        if phase == "done":
            tx.audit(
                action="memory.rescan",
                object_type="memory",
                object_id=self.run_id,
                summary={"dry_run": False, "resumed": self.resumed, **counts.to_dict()},
            )
            self.store.rescans.drop_checkpoint(CHECKPOINT, session=tx.session)
        else:
            self.store.rescans.save_checkpoint(
                CHECKPOINT,
                {
                    "run_id": self.run_id,
                    "phase": phase,
                    "after": after,
                    "counts": counts.to_dict(),
                    "started_at": self.started_at,
                    "updated_at": utcnow(),
                },
                session=tx.session,
            )
        return phase, after, counts


def _dry_run(*, store: MemoryStore, actor: Actor, batch_size: int) -> RescanReport:
    """Count what a rescan would change; the one write is the run's audit entry."""
    counts = RescanCounts()
    phase, after, batches = "observations", None, 0
    while phase != "done":
        phase, after = rescan_batch(
            store=store,
            phase=phase,
            after=after,
            limit=batch_size,
            counts=counts,
            session=None,
            dry_run=True,
        )
        batches += 1
    run_id = str(ObjectId())

    def write(tx: ActionTx) -> None:
        tx.audit(
            action="memory.rescan",
            object_type="memory",
            object_id=run_id,
            summary={"dry_run": True, "resumed": False, **counts.to_dict()},
        )

    run_action(store, actor, write)
    return RescanReport(run_id, counts, True, False, True, batches)


__all__ = ["CHECKPOINT", "RescanReport", "do_memory_rescan"]
