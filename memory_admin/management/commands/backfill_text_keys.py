"""`backfill_text_keys [--agent ID]`: the same-fact key for observations stored before it.

Idempotent. Old duplicates keep no key and are marked `similar_to` the one kept, so the
observation log offers to merge them.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory_admin.stores import get_store
from streams.memory.dedup_backfill import text_keys_backfill

SCOPE_PAGE = 200


class Command(BaseCommand):
    help = "Set text_key on live observations that lack it; mark old duplicates similar_to."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", default=None, help="Only this agent (default: every one).")

    def handle(self, *args: Any, agent: str | None, **options: Any) -> None:
        store = get_store()
        keyed = duplicates = scopes = 0
        after = None
        while True:
            ids = store.scopes.ids_after(after, limit=SCOPE_PAGE)
            for scope_id in ids:
                scope = store.scopes.get(scope_id)
                if scope is None or (agent and scope.agent_id != agent):
                    continue
                count = text_keys_backfill(store=store, scope=scope)
                keyed, duplicates, scopes = (
                    keyed + count.keyed,
                    duplicates + count.duplicates,
                    scopes + 1,
                )
            if len(ids) < SCOPE_PAGE:
                break
            after = ids[-1]
        self.stdout.write(
            f"{scopes} scopes: {keyed} observations keyed, {duplicates} old duplicates marked "
            "similar_to (merge them in the observation log)."
        )
