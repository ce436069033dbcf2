"""`memory_user_names`: one small document per (agent, user) with normalized keys, so a
user is found by the start of their display name or id with an indexed range query.

Scopes keep the display name as sent; searching it case- and accent-insensitively
needs a normalized copy, and a prefix of it is a closed range (`[p, p + U+FFFF)`),
which every engine serves from an index (a regex or `$text` would not be).
`name_key` holds the whole name and each later word of it ("gene wilder", "wilder"),
a multikey field, so a surname finds the user too.
"""

from __future__ import annotations

from typing import Any

from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_user_names"
INDEXES: list[IndexSpec] = [
    index(COLLECTION, "agent_id", "user_id", unique=True),
    # Prefix ranges within one agent, and across agents.
    index(COLLECTION, "agent_id", "name_key"),
    index(COLLECTION, "agent_id", "user_key"),
    index(COLLECTION, "name_key"),
    index(COLLECTION, "user_key"),
]
PREFIX_END = "\uffff"


class UserNameRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def upsert(
        self,
        *,
        agent_id: str,
        user_id: str,
        scope_id: str,
        display_name: str | None,
        name_keys: list[str],
        user_key: str,
        session: ClientSession | None = None,
    ) -> None:
        self.collection.update_one(
            {"agent_id": agent_id, "user_id": user_id},
            {
                "$set": {
                    "scope_id": scope_id,
                    "display_name": display_name,
                    "name_key": name_keys,
                    "user_key": user_key,
                }
            },
            upsert=True,
            session=session,
        )

    def by_prefix(
        self, *, field: str, prefix: str, agent_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Entries whose `field` ("name_key" or "user_key") starts with `prefix`, in order."""
        query: dict[str, Any] = {field: {"$gte": prefix, "$lt": prefix + PREFIX_END}}
        if agent_id is not None:
            query = {"agent_id": agent_id, **query}
        cursor = self.collection.find(query, {"_id": 0}).sort(field, 1).limit(limit)
        return list(cursor)

    def forget(self, *, agent_id: str, user_id: str) -> int:
        return self.collection.delete_one({"agent_id": agent_id, "user_id": user_id}).deleted_count
