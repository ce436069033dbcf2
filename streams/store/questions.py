"""`memory_questions`: every saved version of the questions a scope type's memory must answer.

One history per (agent, scope kind, scope or agent default), like prompt versions: the
agent's default for a kind (`scope_id` None) and each scope's override.
"""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_questions"
INDEXES: list[IndexSpec] = [
    # One version number per level: concurrent saves of one number give one winner. It
    # serves "latest", one version and a history page (versions are dense).
    index(COLLECTION, "agent_id", "scope_kind", "scope_id", "version", unique=True),
    # A scope's own versions go with the scope (forgetting a user: `PrivacyRepository`).
    index(COLLECTION, "scope_id"),
]


class QuestionRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(self, doc: dict[str, Any], *, session: ClientSession | None = None) -> bool:
        """False when that version number is taken already."""
        try:
            self.collection.insert_one(doc, session=session)
        except DuplicateKeyError:
            return False
        return True

    def latest(
        self,
        *,
        agent_id: str,
        scope_kind: str,
        scope_id: ObjectId | None,
        session: ClientSession | None = None,
    ) -> dict[str, Any] | None:
        return self.collection.find_one(
            {"agent_id": agent_id, "scope_kind": scope_kind, "scope_id": scope_id},
            sort=[("version", DESCENDING)],
            session=session,
        )

    def page(
        self,
        *,
        agent_id: str,
        scope_kind: str,
        scope_id: ObjectId | None,
        below_version: int,
        limit: int,
    ) -> list[dict[str, Any]]:
        """Versions in `[below_version - limit, below_version)`, newest first."""
        query = {
            "agent_id": agent_id,
            "scope_kind": scope_kind,
            "scope_id": scope_id,
            "version": {"$gte": max(1, below_version - limit), "$lt": below_version},
        }
        return list(self.collection.find(query).sort("version", DESCENDING).limit(limit))
