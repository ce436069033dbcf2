"""Stop the embedded store server of the data directory, if one runs."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from memory_admin.runtime.embedded_store import stop_embedded_server


class Command(BaseCommand):
    help = "Stop the embedded SecantusDB server that serves MEMORY_DATA_DIR."

    def handle(self, *args: Any, **options: Any) -> None:
        stopped = stop_embedded_server(data_dir=settings.MEMORY_DATA_DIR)
        self.stdout.write("stopped" if stopped else "no embedded store was running")
