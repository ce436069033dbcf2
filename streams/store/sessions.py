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
from pymongo.errors import BulkWriteError, DuplicateKeyError

from streams.core.documents import EPOCH, BufferedMessage
from streams.core.exceptions import Conflict
from streams.core.screened import require_screened
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
    # Forget user: the sessions a person spoke in (one buffer, several speakers).
    index(BUFFERS, "agent_id", "speaker_ids"),
]
RECOUNT_WINDOW = 1000
DUPLICATE_KEY = 11000


class SessionRepository:
    def __init__(self, db: Database) -> None:
        self.buffers = db[BUFFERS]
        self.messages = db[MESSAGES]

    def get_buffer(
        self, agent_id: str, session_id: str, *, session: ClientSession | None = None
    ) -> dict[str, Any] | None:
        return self.buffers.find_one(
            {"agent_id": agent_id, "session_id": session_id}, session=session
        )

    def insert_messages(self, messages: list[BufferedMessage]) -> list[BufferedMessage]:
        """Insert what is new; the messages accepted (re-sent ids are skipped, not errors)."""
        if not messages:
            return []
        for m in messages:
            require_screened(m.content, what="message content")
        try:
            self.messages.insert_many([m.to_mongo() for m in messages], ordered=False)
            return messages
        except BulkWriteError as exc:
            failed = {e["index"] for e in exc.details["writeErrors"] if e["code"] == DUPLICATE_KEY}
            other = [e for e in exc.details["writeErrors"] if e["code"] != DUPLICATE_KEY]
            if other:
                raise
            return [m for i, m in enumerate(messages) if i not in failed]

    def ingest(
        self,
        messages: list[BufferedMessage],
        *,
        agent_id: str,
        session_id: str,
        user_id: str,
        user_name: str | None,
        groups: list[dict[str, str]],
        min_messages: int,
        now: datetime,
        session: ClientSession,
    ) -> tuple[list[BufferedMessage], dict[str, Any]]:
        """Within one transaction: insert the new messages and count exactly those into the
        session's buffer (created on first use); the accepted messages and the buffer.

        A concurrent request that inserted one of the same ids makes this raise `Conflict`
        (the caller retries the transaction, which then sees it as a duplicate).
        """
        for m in messages:
            require_screened(m.content, what="message content")
        ids = [m.message_id for m in messages]
        seen = {
            d["message_id"]
            for d in self.messages.find(
                {"agent_id": agent_id, "session_id": session_id, "message_id": {"$in": ids}},
                {"message_id": 1},
                session=session,
            ).limit(len(ids))
        }
        accepted = [m for m in messages if m.message_id not in seen]
        if accepted:
            try:
                self.messages.insert_many([m.to_mongo() for m in accepted], session=session)
            except (BulkWriteError, DuplicateKeyError) as exc:
                raise Conflict("a message of this request was stored concurrently") from exc
        fields: dict[str, Any] = {"user_id": user_id, "groups": groups, "updated_at": now}
        if user_name:
            fields["user_name"] = user_name
        update: dict[str, Any] = {
            "$set": {**fields, "last_message_at": now},
            "$inc": {
                "unformed_count": len(accepted),
                "unformed_tokens": sum(m.weighted_tokens for m in accepted),
            },
            "$setOnInsert": {
                "formable": False,
                "formation_job_id": None,
                "formation_claimed_at": EPOCH,
                "created_at": now,
            },
        }
        speakers = sorted({m.user_id for m in messages if m.user_id} | {user_id})
        update["$addToSet"] = {"speaker_ids": {"$each": speakers}}
        # An update then a read in the same transaction, not `find_one_and_update`: the
        # embedded store answers that by scanning the whole collection.
        key = {"agent_id": agent_id, "session_id": session_id}
        try:
            self.buffers.update_one(key, update, upsert=True, session=session)
        except DuplicateKeyError as exc:  # two first requests of a session at once
            raise Conflict("the session was created concurrently") from exc
        buffer = self.buffers.find_one(key, session=session)
        assert buffer is not None  # written above, in this transaction
        formable = buffer["unformed_count"] >= min_messages
        if formable != buffer["formable"]:
            self.buffers.update_one(
                {"_id": buffer["_id"]}, {"$set": {"formable": formable}}, session=session
            )
            buffer["formable"] = formable
        return accepted, buffer

    def recount(
        self, buffer_id: ObjectId, *, min_messages: int, session: ClientSession | None = None
    ) -> dict[str, Any] | None:
        """Set a buffer's counters to what its stored unformed messages say (bounded by
        RECOUNT_WINDOW messages; the trigger forms long before that). None: no buffer."""
        buffer = self.buffers.find_one({"_id": buffer_id}, session=session)
        if buffer is None:
            return None
        unformed = list(
            self.messages.find(
                {
                    "agent_id": buffer["agent_id"],
                    "session_id": buffer["session_id"],
                    "formed": False,
                },
                {"weighted_tokens": 1},
                session=session,
            )
            .sort([("created_at", ASCENDING), ("_id", ASCENDING)])
            .limit(RECOUNT_WINDOW)
        )
        counters = {
            "unformed_count": len(unformed),
            "unformed_tokens": float(sum(d.get("weighted_tokens", 0.0) for d in unformed)),
            "formable": len(unformed) >= min_messages,
        }
        self.buffers.update_one({"_id": buffer_id}, {"$set": counters}, session=session)
        return {**buffer, **counters}

    def speaker_buffer_ids(self, agent_id: str, user_id: str, *, limit: int) -> list[ObjectId]:
        """Buffers of sessions the person spoke in (or was the request's user of)."""
        found: list[ObjectId] = []
        for query in (
            {"agent_id": agent_id, "speaker_ids": user_id},
            {"agent_id": agent_id, "user_id": user_id},
        ):
            found += [d["_id"] for d in self.buffers.find(query, {"_id": 1}).limit(limit)]
        return list(dict.fromkeys(found))[:limit]

    def forget_speaker(
        self, buffer_id: ObjectId, user_id: str, *, min_messages: int, session: ClientSession
    ) -> bool:
        """Within a transaction, once the person's messages are gone: drop the buffer if no
        message is left, else take the person out of it and recount. True: dropped."""
        buffer = self.buffers.find_one({"_id": buffer_id}, session=session)
        if buffer is None:
            return False
        key = {"agent_id": buffer["agent_id"], "session_id": buffer["session_id"]}
        self.messages.delete_many({**key, "user_id": user_id}, session=session)
        left = self.messages.find_one(key, {"user_id": 1}, session=session)
        if left is None:
            self.buffers.delete_one({"_id": buffer_id}, session=session)
            return True
        others = [s for s in buffer.get("speaker_ids") or [] if s != user_id]
        fields: dict[str, Any] = {"speaker_ids": others}
        unset: dict[str, str] = {}
        if buffer.get("user_id") == user_id:
            fields["user_id"] = others[0] if others else left.get("user_id") or ""
            fields["groups"] = []
            unset["user_name"] = ""
        update: dict[str, Any] = {"$set": fields}
        if unset:
            update["$unset"] = unset
        self.buffers.update_one({"_id": buffer_id}, update, session=session)
        self.recount(buffer_id, min_messages=min_messages, session=session)
        return False

    def buffer_ids(self, *, after: ObjectId | None, limit: int) -> list[ObjectId]:
        """Every buffer's id, in pages (the `recount` command)."""
        query = {"_id": {"$gt": after if after is not None else ObjectId("0" * 24)}}
        cursor = self.buffers.find(query, {"_id": 1}).sort("_id", ASCENDING).limit(limit)
        return [d["_id"] for d in cursor]

    def buffer_counters(self, buffer_id: ObjectId) -> dict[str, Any] | None:
        """A buffer's unformed counters as stored (the `recount` command's "before")."""
        return self.buffers.find_one(
            {"_id": buffer_id}, {"unformed_count": 1, "unformed_tokens": 1}
        )

    def renew_claim(self, buffer_id: ObjectId, *, job_id: ObjectId, now: datetime) -> bool:
        """The running formation's heartbeat: its claim on the session stays fresh."""
        result = self.buffers.update_one(
            {"_id": buffer_id, "formation_job_id": job_id},
            {"$set": {"formation_claimed_at": now}},
        )
        return result.matched_count == 1

    def claim_formation(
        self,
        buffer_id: ObjectId,
        *,
        job_id: ObjectId,
        now: datetime,
        stale_before: datetime,
        session: ClientSession | None = None,
    ) -> bool:
        """Claim the session for one formation (or re-claim it for the same job, a retry); a
        claim not renewed since `stale_before` (its worker died) is taken over."""
        for claim_filter in (
            {"_id": buffer_id, "formation_job_id": None},
            {"_id": buffer_id, "formation_job_id": job_id},
            {"_id": buffer_id, "formation_claimed_at": {"$lt": stale_before}},
        ):
            result = self.buffers.update_one(
                claim_filter,
                {"$set": {"formation_job_id": job_id, "formation_claimed_at": now}},
                session=session,
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

    def messages_by_id(
        self, agent_id: str, session_id: str, message_ids: list[str]
    ) -> list[BufferedMessage]:
        """One session's messages by the caller's ids (the unique `(agent, session, message
        id)` index), oldest first; ids no longer kept are left out."""
        if not message_ids:
            return []
        wanted = sorted(set(message_ids))
        cursor = self.messages.find(
            {"agent_id": agent_id, "session_id": session_id, "message_id": {"$in": wanted}},
            limit=len(wanted),
        )
        return sorted(
            (BufferedMessage.from_mongo(d) for d in cursor), key=lambda m: (m.created_at, m.id)
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
        if buffer is None:  # forgotten meanwhile: nothing to form
            return False
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
