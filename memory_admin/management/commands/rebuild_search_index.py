"""`rebuild_search_index --scope SCOPE_ID [...] | --all`: a scope's search index rebuilt from
its live observations (a repair; the write path keeps the index exact on its own). `--all`
converts a store whose index an earlier layout wrote (run it once after upgrading)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.stores import get_store
from streams.core.exceptions import MemoryServiceError
from streams.search.index_rebuild import rebuild_all, rebuild_search_index


class Command(BaseCommand):
    help = "Rebuild the search index of the given scopes from their observations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--scope",
            action="append",
            default=[],
            dest="scopes",
            metavar="SCOPE_ID",
            help="A scope to rebuild (repeat for several).",
        )

        parser.add_argument("--all", action="store_true", help="Rebuild every scope.")

    def handle(self, *args: Any, scopes: list[str], **options: Any) -> None:
        store = get_store()
        if options["all"]:
            totals = rebuild_all(store=store)
            self.stdout.write(f"{len(totals)} scopes, {sum(totals.values())} index documents")
            return
        if not scopes:
            raise CommandError("give --scope SCOPE_ID (repeatable) or --all")
        for scope_id in scopes:
            try:
                written = rebuild_search_index(store=store, scope_id=scope_id)
            except MemoryServiceError as exc:
                raise CommandError(f"{scope_id}: {exc.message}") from exc
            self.stdout.write(f"{scope_id}: {written} index documents")
