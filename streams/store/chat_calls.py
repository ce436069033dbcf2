"""`memory_chat_calls`: one record per proxied chat completion, for "why did the agent say that?".

Each record says which memory context was injected (its text and size in tokens),
whether retrieval fired and why, which observations it retrieved, how the upstream
answered, and which ingest job learns from the turn. Written once, after the answer.
The injected context is a copy kept even when the context log is off, so it lists what
it quoted and is scrubbed with the log when that text is removed (`streams.store.quoted`).
"""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.screened import require_screened
from streams.store.indexes import IndexSpec, index
from streams.store.quoted import QuotedText, quoted_indexes

COLLECTION = "memory_chat_calls"
INDEXES: list[IndexSpec] = [
    # A session's calls, newest first (the session page), paged below an _id.
    index(COLLECTION, "agent_id", "session_id", ("_id", -1)),
    # A user's recent calls with an agent (the search inspector).
    index(COLLECTION, "agent_id", "user_id", ("_id", -1)),
    # Removed text: the calls whose injected context quoted an observation or a version.
    *quoted_indexes(COLLECTION),
]


class ChatCallRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]
        # The injected context keeps no removed text (`streams.records.context_scrub`).
        self.quoted = QuotedText(
            self.collection, text_field="context", tokens_field="context_tokens"
        )

    def insert(self, doc: dict[str, Any], *, session: ClientSession | None = None) -> None:
        """One chat turn's record; what the caller sent and the answer passed the screen."""
        require_screened(doc.get("user_message"), what="chat call message")
        require_screened(doc.get("answer_preview"), what="chat call answer")
        self.collection.insert_one(doc, session=session)

    def quoted_record(self, call_id: ObjectId) -> dict[str, Any] | None:
        """One record's id, context and what it quoted (the catch-up job reads it)."""
        return self.collection.find_one(
            {"_id": call_id},
            {"context": 1, "user_id": 1, "quoted_observation_ids": 1, "quoted_versions": 1},
        )

    def for_session(
        self, *, agent_id: str, session_id: str, before: ObjectId | None, limit: int
    ) -> list[dict[str, Any]]:
        query: dict[str, Any] = {"agent_id": agent_id, "session_id": session_id}
        if before is not None:
            query["_id"] = {"$lt": before}
        return list(self.collection.find(query).sort("_id", DESCENDING).limit(limit))

    def for_user(self, *, agent_id: str, user_id: str, limit: int) -> list[dict[str, Any]]:
        query = {"agent_id": agent_id, "user_id": user_id}
        return list(self.collection.find(query).sort("_id", DESCENDING).limit(limit))

    def delete_for_user(self, *, agent_id: str, user_id: str) -> int:
        """Forgetting a user: their calls hold their messages and their memory context."""
        return self.collection.delete_many({"agent_id": agent_id, "user_id": user_id}).deleted_count
