"""Apply every index the code declares (idempotent: existing indexes are left alone)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory_admin.stores import get_store


class Command(BaseCommand):
    help = "Create the MongoDB indexes the memory queries need (safe to run repeatedly)."

    def handle(self, *args: Any, **options: Any) -> None:
        names = get_store().ensure_indexes()
        self.stdout.write(f"{len(names)} indexes in place")
