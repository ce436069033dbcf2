"""Reads of recent sessions for dry runs: an agent's latest buffers and a session's messages.

Separate from `sessions.py` (the ingest and formation paths) because nothing here writes:
an operator picks a recent real conversation to dry-run a prompt on.
"""

from __future__ import annotations

from typing import Any

from pymongo import DESCENDING
from pymongo.database import Database

from streams.core.documents import BufferedMessage
from streams.store.indexes import IndexSpec, index
from streams.store.sessions import BUFFERS, MESSAGES

INDEXES: list[IndexSpec] = [
    # An agent's sessions, latest message first.
    index(BUFFERS, "agent_id", "last_message_at"),
    # A person's sessions and a group's, latest first (a prompt experiment's inputs).
    index(BUFFERS, "agent_id", "speaker_ids", "last_message_at"),
    index(BUFFERS, "agent_id", "groups.id", "last_message_at"),
]


class SessionSampleRepository:
    def __init__(self, db: Database) -> None:
        self.buffers = db[BUFFERS]
        self.messages = db[MESSAGES]

    def recent(self, agent_id: str, *, limit: int) -> list[dict[str, Any]]:
        cursor = (
            self.buffers.find({"agent_id": agent_id})
            .sort("last_message_at", DESCENDING)
            .limit(limit)
        )
        return list(cursor)

    def recent_of_speaker(self, agent_id: str, user_id: str, *, limit: int) -> list[dict[str, Any]]:
        """The sessions `user_id` spoke in, latest message first."""
        query = {"agent_id": agent_id, "speaker_ids": user_id}
        return list(self.buffers.find(query).sort("last_message_at", DESCENDING).limit(limit))

    def recent_of_group(self, agent_id: str, group_id: str, *, limit: int) -> list[dict[str, Any]]:
        """The sessions run with `group_id` among their groups, latest message first."""
        query = {"agent_id": agent_id, "groups.id": group_id}
        return list(self.buffers.find(query).sort("last_message_at", DESCENDING).limit(limit))

    def latest_messages(
        self, agent_id: str, session_id: str, *, limit: int
    ) -> list[BufferedMessage]:
        """The session's latest `limit` messages, formed or not, oldest first.

        One query per `formed` value keeps each an exact prefix of the session index."""
        found: list[BufferedMessage] = []
        for formed in (False, True):
            cursor = (
                self.messages.find(
                    {"agent_id": agent_id, "session_id": session_id, "formed": formed}
                )
                .sort("created_at", DESCENDING)
                .limit(limit)
            )
            found.extend(BufferedMessage.from_mongo(d) for d in cursor)
        found.sort(key=lambda m: m.created_at)
        return found[-limit:]
