"""`BufferedMessage`: a conversation message waiting in its session's buffer until a formation
uses it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents._base import utcnow
from streams.core.ids import new_id


@dataclass
class BufferedMessage:
    """A conversation message waiting in its session's buffer until a formation uses it."""

    agent_id: str
    session_id: str
    message_id: str
    role: str
    content: str
    created_at: datetime
    received_at: datetime = field(default_factory=utcnow)
    user_id: str | None = None
    weighted_tokens: float = 0.0
    formed: bool = False
    id: str = field(default_factory=new_id)
    # Who said it (per message in a group chat) and that speaker's groups at the time.
    user_name: str | None = None
    groups: list[dict[str, str]] = field(default_factory=list)

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "message_id": self.message_id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at,
            "received_at": self.received_at,
            "user_id": self.user_id,
            "weighted_tokens": self.weighted_tokens,
            "formed": self.formed,
            "user_name": self.user_name,
            "groups": self.groups,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> BufferedMessage:
        return cls(
            id=str(doc["_id"]),
            agent_id=doc["agent_id"],
            session_id=doc["session_id"],
            message_id=doc["message_id"],
            role=doc["role"],
            content=doc["content"],
            created_at=doc["created_at"],
            received_at=doc["received_at"],
            user_id=doc.get("user_id"),
            weighted_tokens=doc.get("weighted_tokens", 0.0),
            formed=doc.get("formed", False),
            user_name=doc.get("user_name"),
            groups=doc.get("groups") or [],
        )
