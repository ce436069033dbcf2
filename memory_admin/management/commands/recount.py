"""Repair the session and dashboard counters from what is stored (e.g. after a crash)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory_admin.jobs.tasks import formation_settings
from memory_admin.stores import get_store
from streams.records.recount import recount


class Command(BaseCommand):
    help = (
        "Recount every session's unformed messages and every agent's scope, observation and "
        "pending totals from the stored documents (safe to run at any time)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = recount(store=get_store(), min_messages=formation_settings().min_messages)
        self.stdout.write(
            f"{report.sessions} sessions recounted ({report.sessions_changed} corrected), "
            f"{report.agents} agents recounted ({report.agents_changed} corrected)"
        )
