"""`migrate_legacy_memory [--dry-run] [--source-db NAME]`: the earlier collections, migrated.

Reads `memory_user`, `memory_agent` and `memory_sessions` (never changing them) and
writes scopes, observations and version-1 consolidations (domain.md "Legacy data").
Safe to run again: a second run finds everything present and writes nothing. Ends
with the validation report; a report that does not balance fails the command.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.stores import get_store
from streams.actions import Actor
from streams.actions.legacy import do_legacy_migrate
from streams.legacy.documents import LegacyReport
from streams.legacy.migration import BATCH_SIZE

DB_NAME = re.compile(r"^[A-Za-z0-9_-]{1,63}$")
COLUMNS = ("read", "written", "existing", "skipped", "consolidations")


class Command(BaseCommand):
    help = "Migrate the legacy memory collections into scopes and observations (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Read and report; write nothing."
        )
        parser.add_argument(
            "--source-db",
            default=None,
            metavar="NAME",
            help="The database holding the legacy collections (default: MONGODB_DB).",
        )
        parser.add_argument(
            "--batch-size", type=int, default=BATCH_SIZE, help="Legacy documents per read."
        )
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="Print the report as one JSON document.",
        )

    def handle(
        self,
        *args: Any,
        dry_run: bool,
        source_db: str | None,
        batch_size: int,
        as_json: bool,
        **options: Any,
    ) -> None:
        source = source_db or settings.MONGODB_DB
        if not DB_NAME.match(source):
            raise CommandError("--source-db must be 1 to 63 letters, digits, '_' or '-'")
        if not 1 <= batch_size <= 10_000:
            raise CommandError("--batch-size must be between 1 and 10000")
        report = do_legacy_migrate(
            store=get_store(),
            actor=Actor.cli(),
            source_db=source,
            dry_run=dry_run,
            batch_size=batch_size,
        )
        self.stdout.write(dump_json(report) if as_json else render(report))
        if not report.balanced:
            raise CommandError("validation failed: the counts do not add up (see the report)")


def dump_json(report: LegacyReport) -> str:
    return json.dumps(report.as_dict(), indent=2)


def render(report: LegacyReport) -> str:
    """The validation report as a plain-text table, then the reasons and notes."""
    mode = "dry run: nothing written; counts are what a run would do" if report.dry_run else "done"
    lines = [f'Legacy migration from database "{report.source_db}" ({mode})', ""]
    lines.append(f"{'collection':<17}" + "".join(f"{c:>16}" for c in COLUMNS))
    for name, counts in report.collections.items():
        values = (
            counts.read,
            counts.written,
            counts.existing,
            sum(counts.skipped.values()),
            counts.consolidations,
        )
        lines.append(f"{name:<17}" + "".join(f"{v:>16}" for v in values))
    lines.append(
        "(written: scopes created from memory_user/memory_agent, observations from "
        "memory_sessions; consolidations: version-1 texts)"
    )
    for title, attribute in (("skipped, and why", "skipped"), ("notes", "notes")):
        rows = [
            f"  {name}: {what}: {count}"
            for name, counts in report.collections.items()
            for what, count in sorted(getattr(counts, attribute).items())
        ]
        if rows:
            lines += ["", f"{title}:", *rows]
    verdict = (
        "OK: every document read was written, found already present, or skipped with a reason"
        if report.balanced
        else "FAILED: read != written + existing + skipped"
    )
    lines += ["", f"validation: {verdict}"]
    return "\n".join(lines)
