"""The audit log's document, beside the documents package (streams/core/documents/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import utcnow


@dataclass
class AuditEntry:
    """One write: who (`api:<key>`, `ui:<user>`, `cli`, `system`), what, on which object, when.

    `summary` holds before/after of the changed fields; personal content that was
    deleted is summarised by hash and length, never kept.
    """

    actor: str
    action: str
    object_type: str
    object_id: str | None = None
    agent_id: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    at: datetime = field(default_factory=utcnow)
    id: str | None = None

    def to_mongo(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "actor": self.actor,
            "action": self.action,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "agent_id": self.agent_id,
            "summary": self.summary,
            "at": self.at,
        }
        if self.id:
            doc["_id"] = ObjectId(self.id)
        return doc

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> AuditEntry:
        return cls(
            id=str(doc["_id"]),
            actor=doc["actor"],
            action=doc["action"],
            object_type=doc["object_type"],
            object_id=doc.get("object_id"),
            agent_id=doc.get("agent_id"),
            summary=doc.get("summary") or {},
            at=doc["at"],
        )
