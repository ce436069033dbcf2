"""`memory_corrections`: what support corrected in memory, kept as evidence about a prompt.

A correction is written by the action that made it, in its transaction; the prompt page
reads them newest first per agent and prompt kind (optionally one scope), by `_id` below
the cursor, so a page's filter is an equality plus a bounded range. Forget-user deletes a
user's corrections by the multikey `user_ids`.
"""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_corrections"
INDEXES: list[IndexSpec] = [
    # The prompt page: one agent's corrections of one prompt kind, newest first ...
    index(COLLECTION, "agent_id", "prompt_kind", ("_id", DESCENDING)),
    # ... or of one scope.
    index(COLLECTION, "agent_id", "prompt_kind", "scope_id", ("_id", DESCENDING)),
    # Forget-user: every correction about the user.
    index(COLLECTION, "agent_id", "user_ids"),
]


class CorrectionRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert_many(
        self, docs: list[dict[str, Any]], *, session: ClientSession | None = None
    ) -> None:
        if docs:
            self.collection.insert_many(docs, session=session)

    def get(self, correction_id: ObjectId) -> dict[str, Any] | None:
        return self.collection.find_one({"_id": correction_id})

    def page(
        self,
        *,
        agent_id: str,
        prompt_kind: str,
        scope_id: ObjectId | None,
        before: ObjectId | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        """Newest first, `_id` below `before`; `limit` + 1 asked so the caller sees more."""
        query: dict[str, Any] = {"agent_id": agent_id, "prompt_kind": prompt_kind}
        if scope_id is not None:
            query["scope_id"] = scope_id
        if before is not None:
            query["_id"] = {"$lt": before}
        cursor = self.collection.find(query).sort("_id", DESCENDING).limit(limit + 1)
        return list(cursor)

    def forget_user(self, *, agent_id: str, user_id: str) -> int:
        result = self.collection.delete_many({"agent_id": agent_id, "user_ids": user_id})
        return result.deleted_count
