"""`memory_text_history`: the earlier texts of an observation, one document per content edit.

Written in the edit's own transaction; removed with the observation (a delete purges its
history, forgetting a user purges theirs). The audit log keeps only digests; this is the
one place an earlier text is kept, and only while the observation is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_text_history"
INDEXES: list[IndexSpec] = [
    # One observation's earlier texts, newest first, paged by `_id`.
    index(COLLECTION, "observation_id", "_id"),
    # Forgetting a user drops their individual scope's whole history.
    index(COLLECTION, "scope_id"),
]


class TextHistoryRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(
        self,
        *,
        observation_id: ObjectId,
        scope_id: ObjectId,
        agent_id: str,
        content: str,
        actor: str | None,
        at: datetime,
        session: ClientSession | None = None,
    ) -> ObjectId:
        """The entry's id (an edit's follow-up job names it, never the text)."""
        return self.collection.insert_one(
            {
                "observation_id": observation_id,
                "scope_id": scope_id,
                "agent_id": agent_id,
                "content": content,
                "actor": actor,
                "at": at,
            },
            session=session,
        ).inserted_id

    def get(self, entry_id: ObjectId) -> dict[str, Any] | None:
        return self.collection.find_one({"_id": entry_id})

    def page(
        self, observation_id: ObjectId, *, before: ObjectId | None, limit: int
    ) -> list[dict[str, Any]]:
        """Earlier texts, newest first; `limit` + 1 asked so the caller knows if more follow."""
        query: dict[str, Any] = {"observation_id": observation_id}
        if before is not None:
            query["_id"] = {"$lt": before}
        cursor = self.collection.find(query).sort("_id", DESCENDING).limit(limit + 1)
        return list(cursor)

    def purge(
        self, observation_ids: list[ObjectId], *, session: ClientSession | None = None
    ) -> int:
        if not observation_ids:
            return 0
        return self.collection.delete_many(
            {"observation_id": {"$in": observation_ids}}, session=session
        ).deleted_count

    def purge_scope(self, scope_id: ObjectId) -> int:
        return self.collection.delete_many({"scope_id": scope_id}).deleted_count
