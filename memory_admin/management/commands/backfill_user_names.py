"""`backfill_user_names [--agent ID]`: make users created before names were indexed findable.

Idempotent (an upsert per user); new and renamed users are recorded as they happen.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_admin.stores import get_store
from streams.people.user_find import user_names_backfill

AGENT_PAGE = 100


class Command(BaseCommand):
    help = "Record every user's display name and id for the Users page's search."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", default=None, help="Only this agent (default: every one).")

    def handle(self, *args: Any, agent: str | None, **options: Any) -> None:
        store = get_store()
        agent_ids = [agent] if agent else []
        after = None
        while not agent:
            page = store.agents.list_page(after=after, limit=AGENT_PAGE)
            agent_ids += [a.id for a in page]
            if len(page) < AGENT_PAGE:
                break
            after = page[-1].id
        total = 0
        for agent_id in agent_ids:
            count = user_names_backfill(store=store, agent_id=agent_id)
            total += count
            self.stdout.write(f"{agent_id}: {count} users")
        self.stdout.write(f"Recorded {total} users of {len(agent_ids)} agents.")
