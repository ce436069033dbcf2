"""`prepare [--url URL] [--no-demo]`: every set-up step of `make run`, in one process.

Each `manage.py` process starts Django again (seconds on a loaded machine), so the four
steps `make run` used to take one process each (migrate, ensure_indexes, seed_demo
--if-empty, ensure_demo_login) run here one after the other instead. Every step is
idempotent, so a second `make run` does no work beyond checking that it is done.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from memory_admin.demo.seed import demo_present, seed_demo
from memory_admin.jobs.tasks import formation_settings
from memory_admin.stores import get_store


class Command(BaseCommand):
    help = "Set up for `make run`: migrate, indexes, demo data (once), demo login (printed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where the app serves")
        parser.add_argument(
            "--no-demo", action="store_true", help="Skip the demo data (logins are still made)."
        )

    def handle(self, *args: Any, url: str, no_demo: bool = False, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        # ensure_indexes also converts an old search index layout; seed_demo's own
        # ensure_indexes is not repeated (the step below reads and writes directly).
        call_command("ensure_indexes", stdout=self.stdout, stderr=self.stderr)
        if not no_demo:
            store = get_store()
            if demo_present(store=store):
                self.stdout.write("Demo data already present; nothing to do.")
            else:
                counts = seed_demo(store=store, settings=formation_settings())
                self.stdout.write(
                    self.style.SUCCESS(
                        f"Seeded {counts.agents} agents, {counts.scopes} scopes, "
                        f"{counts.observations} observations, {counts.sessions} sessions."
                    )
                )
        call_command("ensure_demo_login", url=url, stdout=self.stdout, stderr=self.stderr)
