"""`memory_prompt_checks`: saved prompt test cases (an input and what must come out of it)."""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo import ASCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_prompt_checks"
INDEXES: list[IndexSpec] = [
    # An agent's checks, oldest first; the domain caps how many an agent may have.
    index(COLLECTION, "agent_id", "created_at"),
]


class PromptCheckRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(self, doc: dict[str, Any], *, session: ClientSession | None = None) -> None:
        self.collection.insert_one(doc, session=session)

    def for_agent(self, agent_id: str, *, limit: int) -> list[dict[str, Any]]:
        cursor = self.collection.find({"agent_id": agent_id}).sort("created_at", ASCENDING)
        return list(cursor.limit(limit))

    def count(self, agent_id: str) -> int:
        return self.collection.count_documents({"agent_id": agent_id})

    def delete(
        self, agent_id: str, check_id: ObjectId, *, session: ClientSession | None = None
    ) -> bool:
        result = self.collection.delete_one(
            {"_id": check_id, "agent_id": agent_id}, session=session
        )
        return result.deleted_count == 1

    def forget_user(self, *, agent_id: str, user_id: str) -> int:
        """Checks made from a forgotten user's corrections (`user_ids`)."""
        result = self.collection.delete_many({"agent_id": agent_id, "user_ids": user_id})
        return result.deleted_count
