"""Rewrite the embedded store's data directory with only its live documents."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_admin.runtime.compaction import compact_data_dir


class Command(BaseCommand):
    help = (
        "Compact the embedded store (MEMORY_DATA_DIR): stop it, copy the live documents "
        "into a fresh directory and delete the old files, so deleted and forgotten data "
        "leaves the disk. Stop the app first; with MONGODB_URI set, use MongoDB's compact."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.MONGODB_URI:
            raise CommandError("MONGODB_URI is set: compact that server with its own tools")
        outcome = compact_data_dir(
            data_dir=settings.MEMORY_DATA_DIR, start_timeout=settings.MEMORY_EMBEDDED_START_TIMEOUT
        )
        documents = sum(outcome["copied"].values())
        self.stdout.write(
            f"compacted: {documents} documents in {len(outcome['copied'])} collections, "
            f"{outcome['bytes_before']} -> {outcome['bytes_after']} bytes"
        )
