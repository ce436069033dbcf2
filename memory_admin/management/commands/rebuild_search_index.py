"""`rebuild_search_index --scope SCOPE_ID [...]`: a scope's search index rebuilt from its
live observations (a repair; the write path keeps the index exact on its own)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.stores import get_store
from streams.exceptions import MemoryServiceError
from streams.search_rebuild import rebuild_search_index


class Command(BaseCommand):
    help = "Rebuild the search index of the given scopes from their observations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--scope",
            action="append",
            required=True,
            dest="scopes",
            metavar="SCOPE_ID",
            help="A scope to rebuild (repeat for several).",
        )

    def handle(self, *args: Any, scopes: list[str], **options: Any) -> None:
        store = get_store()
        for scope_id in scopes:
            try:
                written = rebuild_search_index(store=store, scope_id=scope_id)
            except MemoryServiceError as exc:
                raise CommandError(f"{scope_id}: {exc.message}") from exc
            self.stdout.write(f"{scope_id}: {written} index documents")
