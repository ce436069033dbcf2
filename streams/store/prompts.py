"""`memory_prompts`: every saved version of every agent default and scope override prompt."""

from __future__ import annotations

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.core.documents import PromptKind, PromptVersion
from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_prompts"
INDEXES: list[IndexSpec] = [
    # One version number per (agent, scope or agent default, kind): the unique key is what
    # turns two concurrent saves of the same next version into one winner and one retry.
    # It also serves "latest", "get one" and history (versions are dense: a page is an
    # exact range of versions).
    index(COLLECTION, "agent_id", "scope_id", "kind", "version", unique=True),
]


class PromptRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(self, entry: PromptVersion, *, session: ClientSession | None = None) -> bool:
        """Insert a new version; False when that version number is taken already (in a
        transaction, `session`, that aborts it: the caller starts it again)."""
        try:
            self.collection.insert_one(entry.to_mongo(), session=session)
        except DuplicateKeyError:
            return False
        return True

    def latest(
        self,
        *,
        agent_id: str,
        scope_id: ObjectId | None,
        kind: PromptKind,
        session: ClientSession | None = None,
    ) -> PromptVersion | None:
        doc = self.collection.find_one(
            {"agent_id": agent_id, "scope_id": scope_id, "kind": kind},
            sort=[("version", DESCENDING)],
            session=session,
        )
        return PromptVersion.from_mongo(doc) if doc else None

    def get(
        self, *, agent_id: str, scope_id: ObjectId | None, kind: PromptKind, version: int
    ) -> PromptVersion | None:
        doc = self.collection.find_one(
            {"agent_id": agent_id, "scope_id": scope_id, "kind": kind, "version": version}
        )
        return PromptVersion.from_mongo(doc) if doc else None

    def page(
        self,
        *,
        agent_id: str,
        scope_id: ObjectId | None,
        kind: PromptKind,
        below_version: int,
        limit: int,
    ) -> list[PromptVersion]:
        """Versions in `[below_version - limit, below_version)`, newest first."""
        query = {
            "agent_id": agent_id,
            "scope_id": scope_id,
            "kind": kind,
            "version": {"$gte": max(1, below_version - limit), "$lt": below_version},
        }
        cursor = self.collection.find(query).sort("version", DESCENDING).limit(limit)
        return [PromptVersion.from_mongo(d) for d in cursor]

    def delete_for_scope(self, *, agent_id: str, scope_id: ObjectId) -> int:
        """Drop a scope's overrides with the scope itself (forgetting a user); the count."""
        result = self.collection.delete_many({"agent_id": agent_id, "scope_id": scope_id})
        return result.deleted_count
