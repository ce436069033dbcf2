"""`memory_context_calls`: what each context call gave the agent, for "why did it say that?".

One record per context answer (`POST .../context` and the chat proxy): the XML, the
retrieval decision and its reason, the retrieved observation ids, the size in tokens,
the budget and what it dropped, and the caller's key. Records are written behind (the
call never waits for them: `write_behind`), expire after `MEMORY_CONTEXT_LOG_DAYS` (a
TTL index on `expires_at`; lists also stop at that window, so a late TTL monitor never
shows older calls) and are deleted by forget-user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.database import Database

from streams.core.screened import require_screened
from streams.store import write_behind
from streams.store.indexes import IndexSpec, index
from streams.store.quoted import QuotedText, quoted_indexes

COLLECTION = "memory_context_calls"
INDEXES: list[IndexSpec] = [
    # A user's calls, a session's calls and an agent's calls, newest first, paged by _id.
    index(COLLECTION, "agent_id", "user_id", ("_id", -1)),
    index(COLLECTION, "agent_id", "session_id", ("_id", -1)),
    index(COLLECTION, "agent_id", ("_id", -1)),
    # Removed text: the records quoting an observation or a consolidation version.
    *quoted_indexes(COLLECTION),
    # Retention: the store removes a record once its `expires_at` has passed.
    IndexSpec(
        collection=COLLECTION,
        keys=(("expires_at", 1),),
        name="expires_at_ttl",
        options={"expireAfterSeconds": 0},
    ),
]
MAX_HEALTH_CALLS = 100_000  # calls read for one agent's retrieval health (days x calls)


class ContextCallRepository:
    def __init__(self, db: Database, *, flush_seconds: float = 0.0) -> None:
        self.collection = db[COLLECTION]
        self.flush_seconds = flush_seconds
        # What removed text is scrubbed from (`streams.records.context_scrub`).
        self.quoted = QuotedText(self.collection, text_field="xml", tokens_field="tokens")

    def record(self, doc: dict[str, Any]) -> None:
        """Written behind (within `flush_seconds`), or now when that is 0. Never raises:
        a failed write is logged and counted (`write_behind.failures()`). What the caller
        sent (`message`) must have passed the screen (secrets redacted)."""
        require_screened(doc.get("message"), what="context call message")
        if self.flush_seconds > 0:
            write_behind.add(self.collection, doc, self.flush_seconds)
        else:
            write_behind.write_now(self.collection, [doc])

    def get(self, *, agent_id: str, call_id: ObjectId) -> dict[str, Any] | None:
        """The call; one still queued in this process is written first (the playground
        links a turn's call the moment it answers)."""
        query = {"_id": call_id, "agent_id": agent_id}
        found = self.collection.find_one(query)
        if found is None and self.flush_seconds > 0:
            write_behind.flush()
            found = self.collection.find_one(query)
        return found

    def known(self, *, agent_id: str, call_id: ObjectId, now: datetime) -> bool:
        """Whether the agent made this call: stored, queued in this process (flushed to
        see), or too recent to be stored yet by another process (written behind)."""
        if self.collection.find_one({"_id": call_id, "agent_id": agent_id}, {"_id": 1}):
            return True
        if self.flush_seconds <= 0:
            return False
        write_behind.flush()
        stored = self.collection.find_one({"_id": call_id}, {"agent_id": 1})
        if stored is not None:
            return stored.get("agent_id") == agent_id
        age = (now - call_id.generation_time).total_seconds()
        return -1 <= age <= 2 * self.flush_seconds + 1

    def page(
        self,
        *,
        agent_id: str,
        user_id: str | None = None,
        session_id: str | None = None,
        since: datetime,
        before: ObjectId | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        """Newest first, at or after `since`, below the cursor `before`."""
        query: dict[str, Any] = {"agent_id": agent_id}
        if user_id is not None:
            query["user_id"] = user_id
        if session_id is not None:
            query["session_id"] = session_id
        window: dict[str, Any] = {"$gte": ObjectId.from_datetime(since)}
        if before is not None:
            window["$lt"] = before
        query["_id"] = window
        return list(self.collection.find(query).sort("_id", DESCENDING).limit(limit))

    def since(self, *, agent_id: str, since: datetime) -> list[dict[str, Any]]:
        """An agent's calls since a time (retrieval health): only the fields it counts."""
        query = {"agent_id": agent_id, "_id": {"$gte": ObjectId.from_datetime(since)}}
        fields = {
            "created_at": 1,
            "message": 1,
            "retrieval": 1,
            "retrieved_ids": 1,
            "search_ms": 1,
            "scopes": 1,
        }
        return list(
            self.collection.find(query, fields).sort("_id", DESCENDING).limit(MAX_HEALTH_CALLS)
        )

    def delete_for_user(self, *, agent_id: str, user_id: str) -> int:
        """Forgetting a user: their calls hold their messages and their memory. Calls still
        waiting to be written are written first, so none lands after the forget."""
        write_behind.flush()
        return self.collection.delete_many({"agent_id": agent_id, "user_id": user_id}).deleted_count
