"""The scopes a caller may see (its individual scope, its groups, the collective ones), in
one query on `memory_scopes` by the stored `context_key`.

The identity index cannot serve this: `$in` over several of its fields (or a top-level
`$or`) made the embedded store scan every scope of the agent (4.6 s at 100,000 scopes);
equality on `agent_id` and `$in` on `context_key` is a few point lookups (1.2 ms).
"""

from __future__ import annotations

from pymongo.database import Database

from streams.core.documents import Scope
from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_scopes"
INDEXES: list[IndexSpec] = [index(COLLECTION, "agent_id", "context_key")]
MAX_VISIBLE_SCOPES = 500  # a user in many groups, an agent with many shards: still bounded


class VisibleScopeReader:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def find(
        self, *, agent_id: str, user_id: str | None, group_ids: list[str], collective: bool = True
    ) -> list[Scope]:
        keys = [f"g:{g}" for g in group_ids]
        if user_id is not None:
            keys.append(f"u:{user_id}")
        if collective:
            keys.append("c")
        if not keys:
            return []
        cursor = self.collection.find({"agent_id": agent_id, "context_key": {"$in": keys}}).limit(
            MAX_VISIBLE_SCOPES
        )
        return [Scope.from_mongo(d) for d in cursor]
