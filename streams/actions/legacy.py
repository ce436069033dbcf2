"""The legacy migration as an action: the run, then its one audit entry.

The migration writes in batches, each its own transaction (the legacy data can be far
larger than one transaction takes); the entry, with the run's counts, is recorded once
the batches are in, and not for a dry run (it wrote nothing).
"""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.legacy.documents import LegacyReport
from streams.legacy.migration import BATCH_SIZE, legacy_migrate
from streams.store import MemoryStore


def do_legacy_migrate(
    *,
    store: MemoryStore,
    actor: Actor,
    source_db: str,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> LegacyReport:
    """Migrate `source_db`'s legacy collections; the validation report."""
    report = legacy_migrate(
        store=store,
        source_db=source_db,
        dry_run=dry_run,
        batch_size=batch_size,
        actor=str(actor),
    )
    if dry_run:
        return report

    def write(tx: ActionTx) -> None:
        tx.audit(
            action="legacy.migrate",
            object_type="legacy",
            object_id=None,
            summary={
                "source_db": source_db,
                "written": report.written,
                "balanced": report.balanced,
                **{f"{name}_read": c.read for name, c in report.collections.items()},
            },
        )

    run_action(store, actor, write)
    return report
