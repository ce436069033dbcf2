"""`memory_session_buffers` and `memory_messages`: conversation messages awaiting formation.

One buffer document per (agent, session) keeps the counters the triggers read
(`unformed_count`, `unformed_tokens`) and the formation claim; one document per
message, unique by (agent, session, message id), makes ingest idempotent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import BulkWriteError

from streams.documents import EPOCH, BufferedMessage
from streams.store.indexes import IndexSpec, index

BUFFERS = "memory_session_buffers"
MESSAGES = "memory_messages"
INDEXES: list[IndexSpec] = [
    index(BUFFERS, "agent_id", "session_id", unique=True),
    # The cold-session sweep: only buffers that could form are flagged `formable`.
    index(BUFFERS, "formable", "last_message_at"),
    # Idempotent ingest: a re-sent message id is a duplicate key.
    index(MESSAGES, "agent_id", "session_id", "message_id", unique=True),
    # A session's unformed messages, oldest first (bounded by the formation triggers).
    index(MESSAGES, "agent_id", "session_id", "formed", "created_at"),
    # Forget user: a user's buffered messages.
    index(MESSAGES, "agent_id", "user_id"),
]
DUPLICATE_KEY = 11000


class SessionRepository:
    def __init__(self, db: Database) -> None:
        self.buffers = db[BUFFERS]
        self.messages = db[MESSAGES]

    def upsert_buffer(
        self,
        *,
        agent_id: str,
        session_id: str,
        user_id: str,
        user_name: str | None,
        groups: list[dict[str, str]],
        now: datetime,
    ) -> None:
        """Create the session's buffer on first use; remember who talks in it and their groups."""
        fields: dict[str, Any] = {"user_id": user_id, "groups": groups, "updated_at": now}
        if user_name:
            fields["user_name"] = user_name
        self.buffers.update_one(
            {"agent_id": agent_id, "session_id": session_id},
            {
                "$set": fields,
                "$setOnInsert": {
                    "unformed_count": 0,
                    "unformed_tokens": 0.0,
                    "formable": False,
                    "last_message_at": now,
                    "formation_job_id": None,
                    "formation_claimed_at": EPOCH,
                    "created_at": now,
                },
            },
            upsert=True,
        )

    def get_buffer(self, agent_id: str, session_id: str) -> dict[str, Any] | None:
        return self.buffers.find_one({"agent_id": agent_id, "session_id": session_id})

    def insert_messages(self, messages: list[BufferedMessage]) -> list[BufferedMessage]:
        """Insert what is new; the messages accepted (re-sent ids are skipped, not errors)."""
        if not messages:
            return []
        try:
            self.messages.insert_many([m.to_mongo() for m in messages], ordered=False)
            return messages
        except BulkWriteError as exc:
            failed = {e["index"] for e in exc.details["writeErrors"] if e["code"] == DUPLICATE_KEY}
            other = [e for e in exc.details["writeErrors"] if e["code"] != DUPLICATE_KEY]
            if other:
                raise
            return [m for i, m in enumerate(messages) if i not in failed]

    def add_unformed(
        self,
        *,
        agent_id: str,
        session_id: str,
        count: int,
        tokens: float,
        min_messages: int,
        now: datetime,
    ) -> dict[str, Any] | None:
        """Count new messages into the buffer and return it as it is now."""
        key = {"agent_id": agent_id, "session_id": session_id}
        self.buffers.update_one(
            key,
            {
                "$inc": {"unformed_count": count, "unformed_tokens": tokens},
                "$set": {"last_message_at": now},
            },
        )
        buffer = self.buffers.find_one(key)
        if (
            buffer is not None
            and buffer["unformed_count"] >= min_messages
            and not buffer["formable"]
        ):
            self.buffers.update_one({"_id": buffer["_id"]}, {"$set": {"formable": True}})
        return buffer

    def claim_formation(
        self, buffer_id: ObjectId, *, job_id: ObjectId, now: datetime, stale_before: datetime
    ) -> bool:
        """Claim the session for one formation; a claim older than `stale_before` is taken over."""
        for claim_filter in (
            {"_id": buffer_id, "formation_job_id": None},
            {"_id": buffer_id, "formation_claimed_at": {"$lt": stale_before}},
        ):
            result = self.buffers.update_one(
                claim_filter, {"$set": {"formation_job_id": job_id, "formation_claimed_at": now}}
            )
            if result.matched_count == 1:
                return True
        return False

    def release_claim(
        self, buffer_id: ObjectId, *, job_id: ObjectId, session: ClientSession | None = None
    ) -> None:
        self.buffers.update_one(
            {"_id": buffer_id, "formation_job_id": job_id},
            {"$set": {"formation_job_id": None, "formation_claimed_at": EPOCH}},
            session=session,
        )

    def unformed(self, agent_id: str, session_id: str, *, limit: int) -> list[BufferedMessage]:
        cursor = (
            self.messages.find({"agent_id": agent_id, "session_id": session_id, "formed": False})
            .sort([("created_at", ASCENDING), ("_id", ASCENDING)])
            .limit(limit)
        )
        return [BufferedMessage.from_mongo(d) for d in cursor]

    def mark_formed(
        self,
        message_ids: list[ObjectId],
        *,
        buffer_id: ObjectId,
        tokens: float,
        job_id: ObjectId,
        min_messages: int,
        session: ClientSession,
    ) -> bool:
        """Within the formation's transaction: the messages leave the buffer; False if any
        was formed already (the transaction must then abort)."""
        result = self.messages.update_many(
            {"_id": {"$in": message_ids}, "formed": False},
            {"$set": {"formed": True, "formation_job_id": job_id}},
            session=session,
        )
        if result.modified_count != len(message_ids):
            return False
        buffer = self.buffers.find_one({"_id": buffer_id}, session=session)
        remaining = buffer["unformed_count"] - len(message_ids)
        self.buffers.update_one(
            {"_id": buffer_id},
            {
                "$inc": {"unformed_count": -len(message_ids), "unformed_tokens": -tokens},
                "$set": {
                    "formable": remaining >= min_messages,
                    "formation_job_id": None,
                    "formation_claimed_at": EPOCH,
                },
            },
            session=session,
        )
        return True

    def cold_buffers(self, *, idle_before: datetime, limit: int) -> list[dict[str, Any]]:
        cursor = self.buffers.find(
            {"formable": True, "last_message_at": {"$lt": idle_before}}
        ).limit(limit)
        return list(cursor)
