"""`memory_erasure_tombstones`: one document per forgotten (agent, user), holding no
personal data: its `_id` is a keyed hash (HMAC-SHA256 with the server's erasure key) of
the agent and user id, so the store can answer "was this user forgotten?" for a given
id, and cannot list who was.

`agent_id` is kept in the clear (an agent is not a person) for the count per agent.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any

from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_erasure_tombstones"
INDEXES: list[IndexSpec] = [index(COLLECTION, "agent_id", "created_at")]
# Tests and the development server: production passes its own key (MEMORY_ERASURE_KEY).
DEFAULT_KEY = b"memory-admin-erasure-development-key"


class TombstoneRepository:
    def __init__(self, db: Database, *, key: bytes | None = None) -> None:
        self.collection = db[COLLECTION]
        self._key = key or DEFAULT_KEY

    def key_of(self, agent_id: str, user_id: str) -> str:
        """The tombstone's id for one user of one agent (hex HMAC; the ids are joined with
        a NUL, which neither can hold, so no two pairs share a message)."""
        message = f"{agent_id}\0{user_id}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def put(
        self,
        *,
        agent_id: str,
        user_id: str,
        now: datetime,
        job_id: str | None,
        session: ClientSession | None = None,
    ) -> None:
        """Leave (or keep) the tombstone; idempotent (a retried forget job)."""
        self.collection.update_one(
            {"_id": self.key_of(agent_id, user_id)},
            {
                "$setOnInsert": {"agent_id": agent_id, "created_at": now},
                "$set": {"forgotten_at": now, "job_id": job_id},
            },
            upsert=True,
            session=session,
        )

    def covered(
        self, *, agent_id: str, user_ids: list[str], session: ClientSession | None = None
    ) -> set[str]:
        """Those of `user_ids` a tombstone of this agent covers (one `_id` query)."""
        wanted = {self.key_of(agent_id, u): u for u in set(user_ids) if u}
        if not wanted:
            return set()
        found = self.collection.find({"_id": {"$in": sorted(wanted)}}, {"_id": 1}, session=session)
        return {wanted[d["_id"]] for d in found}

    def get(self, *, agent_id: str, user_id: str) -> dict[str, Any] | None:
        return self.collection.find_one({"_id": self.key_of(agent_id, user_id)})

    def lift(self, *, agent_id: str, user_id: str, session: ClientSession | None = None) -> bool:
        """Remove the tombstone; False when there was none."""
        result = self.collection.delete_one(
            {"_id": self.key_of(agent_id, user_id), "agent_id": agent_id}, session=session
        )
        return result.deleted_count == 1

    def count(self, *, agent_id: str) -> int:
        return self.collection.count_documents({"agent_id": agent_id})
