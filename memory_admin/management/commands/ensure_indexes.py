"""Apply every index the code declares (idempotent: existing indexes are left alone), and
convert a search index an earlier version wrote (once; recorded in the index)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory_admin.stores import get_store
from streams.search.index_rebuild import search_layout_ensure


class Command(BaseCommand):
    help = "Create the MongoDB indexes the memory queries need (safe to run repeatedly)."

    def handle(self, *args: Any, **options: Any) -> None:
        store = get_store()
        names = store.ensure_indexes()
        self.stdout.write(f"{len(names)} indexes in place")
        dated = store.scopes.pending_since_backfill()
        if dated:
            self.stdout.write(f"pending_since set on {dated} scopes (the age sweep's key)")
        converted = search_layout_ensure(store=store)
        if converted:
            self.stdout.write(f"search index of {converted} scopes converted to the new layout")
