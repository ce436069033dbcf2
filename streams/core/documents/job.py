"""`Job`: background work: a formation, consolidation, propagation or forget-user run."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents._base import JobStatus, _oid, _str, utcnow
from streams.core.ids import new_id
from streams.core.job_kinds import JobKind


@dataclass
class Job:
    """Background work: a formation, consolidation, propagation or forget-user run."""

    kind: JobKind
    agent_id: str
    status: JobStatus = "queued"
    scope_id: str | None = None
    session_id: str | None = None
    trigger: str | None = None
    actor: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    llm_calls: int = 0
    attempts: int = 0
    created_at: datetime = field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    id: str = field(default_factory=new_id)

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "kind": self.kind,
            "agent_id": self.agent_id,
            "status": self.status,
            "scope_id": _oid(self.scope_id),
            "session_id": self.session_id,
            "trigger": self.trigger,
            "actor": self.actor,
            "payload": self.payload,
            "result": self.result,
            "error": self.error,
            "llm_calls": self.llm_calls,
            "attempts": self.attempts,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> Job:
        return cls(
            id=str(doc["_id"]),
            kind=doc["kind"],
            agent_id=doc["agent_id"],
            status=doc["status"],
            scope_id=_str(doc.get("scope_id")),
            session_id=doc.get("session_id"),
            trigger=doc.get("trigger"),
            actor=doc.get("actor"),
            payload=doc.get("payload") or {},
            result=doc.get("result") or {},
            error=doc.get("error"),
            llm_calls=doc.get("llm_calls", 0),
            attempts=doc.get("attempts", 0),
            created_at=doc["created_at"],
            started_at=doc.get("started_at"),
            finished_at=doc.get("finished_at"),
        )

    @property
    def id_oid(self) -> ObjectId:
        return ObjectId(self.id)

    @property
    def duration_ms(self) -> int | None:
        if self.started_at and self.finished_at:
            return int((self.finished_at - self.started_at).total_seconds() * 1000)
        return None
