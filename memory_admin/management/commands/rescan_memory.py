"""`rescan_memory [--dry-run] [--batch N] [--max-batches N]`: the detectors again over
stored memory, after they changed (`streams.actions.rescan.do_memory_rescan`).

Batched and resumable: a run that is killed or stopped (`--max-batches`) goes on from
its checkpoint when the command runs again, and changes nothing twice. One audit entry
per run (`memory.rescan`). `--dry-run` counts what would change and writes nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_admin.stores import get_store
from streams.actions import Actor
from streams.actions.rescan import DEFAULT_BATCH, do_memory_rescan


class Command(BaseCommand):
    help = "Re-run the detectors over stored observations and consolidations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Count what would change.")
        parser.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="Items a batch.")
        parser.add_argument(
            "--max-batches", type=int, default=None, help="Stop after this many (resumable)."
        )

    def handle(
        self, *args: Any, dry_run: bool, batch: int, max_batches: int | None, **options: Any
    ) -> None:
        report = do_memory_rescan(
            store=get_store(),
            actor=Actor("cli"),
            batch_size=batch,
            dry_run=dry_run,
            max_batches=max_batches,
        )
        counts = report.counts
        verb = "would change" if report.dry_run else "changed"
        state = "done" if report.done else "stopped; run again to go on"
        self.stdout.write(
            f"rescan {report.run_id} ({'resumed, ' if report.resumed else ''}{state}): "
            f"{counts.observations} observations, {verb} {counts.observations_changed} "
            f"({counts.redacted} redacted); {counts.consolidations} consolidations, "
            f"{verb} {counts.consolidations_changed}; flags added "
            f"{json.dumps(counts.flags_added, sort_keys=True)}, removed "
            f"{json.dumps(counts.flags_removed, sort_keys=True)}; "
            f"{'would move' if report.dry_run else 'moved'} {counts.moved_to_review} into review"
        )
