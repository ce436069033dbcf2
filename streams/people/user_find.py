"""Find a user of an agent (or of every agent) by the start of their display name or id.

Operators know "Gene" or the first characters of an id, not the exact id and agent the
Users page needed. Each individual scope's user is kept in `memory_user_names` with
normalized keys (written when the scope is created or renamed; `backfill_user_names`
fills it for older data), and a search is two indexed prefix ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams.core.exceptions import InvalidInput
from streams.memory.scopes import scope_list
from streams.memory.user_names import normalize, user_name_record
from streams.store import MemoryStore

MIN_CHARS = 2
MAX_CHARS = 128
MAX_RESULTS = 25
BACKFILL_PAGE = 200


@dataclass(frozen=True)
class UserMatch:
    agent_id: str
    user_id: str
    display_name: str | None
    scope_id: str
    matched: str  # "name" or "id"


def user_find(
    *, store: MemoryStore, text: str, agent_id: str | None = None, limit: int = MAX_RESULTS
) -> list[UserMatch]:
    """Users whose display name (any word of it) or id starts with `text`; names first."""
    prefix = normalize(text)
    if not MIN_CHARS <= len(prefix) <= MAX_CHARS:
        raise InvalidInput(
            f"type {MIN_CHARS} to {MAX_CHARS} characters of a name or id",
            details=[{"field": "q"}],
        )
    limit = max(1, min(limit, MAX_RESULTS))
    found: dict[tuple[str, str], UserMatch] = {}
    for field, matched in (("name_key", "name"), ("user_key", "id")):
        docs = store.user_names.by_prefix(
            field=field, prefix=prefix, agent_id=agent_id, limit=limit
        )
        for doc in docs:
            key = (doc["agent_id"], doc["user_id"])
            if key not in found:
                found[key] = UserMatch(
                    agent_id=doc["agent_id"],
                    user_id=doc["user_id"],
                    display_name=doc.get("display_name"),
                    scope_id=doc["scope_id"],
                    matched=matched,
                )
    return list(found.values())[:limit]


def user_names_backfill(*, store: MemoryStore, agent_id: str) -> int:
    """Record every individual scope of an agent (data from before the names were kept)."""
    count, cursor = 0, None
    while True:
        page = scope_list(
            store=store,
            agent_id=agent_id,
            scope_type="individual",
            cursor=cursor,
            limit=BACKFILL_PAGE,
        )
        for scope in page.items:
            user_name_record(store=store, scope=scope)
            count += 1
        if not page.next_cursor:
            return count
        cursor = page.next_cursor
