"""Seed the demo data set (3 agents, 30 users, groups, shards, sessions, chat calls, history)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory_admin.demo.seed import demo_present, seed_demo
from memory_admin.jobs.tasks import formation_settings
from memory_admin.stores import get_store


class Command(BaseCommand):
    help = "Create a believable demo data set through the app's own services."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="Do nothing (and succeed) when the demo data is already there.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        store = get_store()
        store.ensure_indexes()
        if demo_present(store=store):
            message = "Demo data already present; nothing to do."
            if options["if_empty"]:
                self.stdout.write(message)
                return
            self.stderr.write(message)
            raise SystemExit(1)
        counts = seed_demo(store=store, settings=formation_settings())
        self.stdout.write(
            self.style.SUCCESS(
                f"Seeded {counts.agents} agents, {counts.scopes} scopes, "
                f"{counts.observations} observations, {counts.versions} consolidation versions, "
                f"{counts.sessions} sessions, {counts.chat_calls} chat calls, {counts.jobs} jobs."
            )
        )
