"""The earlier memory collections (`memory_sessions`, `memory_user`, `memory_agent`), read only.

They are not ours: we never write their documents, and `ensure_indexes` does not
know them. Every read is a batch over a closed `_id` range: their ids are ObjectIds,
so the range is a window of creation time. The window adapts to the data: after a
full batch the next window spans the time that batch did, after a short one it
doubles; so each query matches about one batch whatever the collection's size
(`limit` alone would not stop the embedded store's scan).

The one thing added to the source: an index led by `_id` (`READ_INDEXES`), created
when reading starts. mongod serves `_id` ranges from its `_id` index, but the
embedded store does not (measured at 10,000 documents: ~1 s for an empty `_id`
range, every window a full scan; 4 ms with this index), and the migration must
stay linear at a million items.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, MongoClient
from pymongo.database import Database

from streams.store.indexes import IndexSpec, apply_indexes, index

SESSIONS = "memory_sessions"
USERS = "memory_user"
AGENTS = "memory_agent"
LEGACY_COLLECTIONS = (SESSIONS, USERS, AGENTS)
# Applied to the source database by `LegacyReader.prepare`, never by `ensure_indexes`.
READ_INDEXES: list[IndexSpec] = [index(name, "_id", "agent_id") for name in LEGACY_COLLECTIONS]

LOWEST_ID = ObjectId("0" * 24)
HIGHEST_ID = ObjectId("f" * 24)
LAST_WINDOW_START = datetime(2106, 1, 1, tzinfo=UTC)  # ObjectId seconds are 32-bit
FIRST_WINDOW = timedelta(days=1)
SMALLEST_WINDOW = timedelta(seconds=2)  # ObjectId time has whole seconds
LARGEST_WINDOW = timedelta(days=365)  # the most one oversized first window can cost


class LegacyReader:
    """Batches of one database's legacy collections, oldest `_id` first."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(cls, client: MongoClient, db_name: str) -> LegacyReader:
        return cls(client[db_name])

    def prepare(self) -> list[str]:
        """Make `_id` windows cheap on every store (idempotent; documents untouched).

        Only collections that exist get it: preparing must not create a collection.
        """
        present = set(self.db.list_collection_names())
        return apply_indexes(self.db, [s for s in READ_INDEXES if s.collection in present])

    def batches(self, collection: str, *, batch_size: int) -> Iterator[list[dict[str, Any]]]:
        """Every document with an ObjectId `_id`, in `_id` order, about `batch_size` at a time."""
        if collection not in LEGACY_COLLECTIONS:
            raise ValueError(f"not a legacy collection: {collection}")
        coll = self.db[collection]
        start, after, window = LOWEST_ID, None, FIRST_WINDOW
        while True:
            begins = (after or start).generation_time
            last = begins >= LAST_WINDOW_START - window
            end = HIGHEST_ID if last else ObjectId.from_datetime(begins + window)
            condition: dict[str, Any] = {"$gte": start} if after is None else {"$gt": after}
            condition["$lte" if last else "$lt"] = end
            docs = list(coll.find({"_id": condition}).sort("_id", ASCENDING).limit(batch_size))
            if docs:
                yield docs
            if len(docs) == batch_size:  # crowded: the next window spans what this batch did
                after = docs[-1]["_id"]
                window = max(after.generation_time - begins, SMALLEST_WINDOW)
                continue
            if last:
                return
            start, after = end, None  # the window is read to its end
            if len(docs) < max(batch_size // 2, 1):
                window = min(window * 2, LARGEST_WINDOW)
