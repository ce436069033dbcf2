"""`ConsolidationVersion`: one entry of a scope's consolidation history: every change is a new
version."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents._base import utcnow
from streams.core.ids import new_id


@dataclass
class ConsolidationVersion:
    """One entry of a scope's consolidation history: every change is a new version."""

    scope_id: str
    agent_id: str
    version: int
    text: str
    trigger: str
    actor: str | None = None
    absorbed_observation_ids: list[str] = field(default_factory=list)
    prompt_version: int | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: int = 0
    restored_from: int | None = None
    warning: str | None = None  # e.g. a model answer cut to the word limit
    redacted: bool = False  # its text held something deleted, corrected or forgotten
    created_at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=new_id)
    # What this text no longer states (`streams.memory.fidelity`), computed at commit:
    # {"unstated_observation_ids": [...], "dropped_sentences": [...]}; None before it was.
    fidelity: dict[str, list[str]] | None = None
    # The questions' answers (`streams.memory.coverage`): [{"question", "answer", "status"}],
    # status answered|unanswered|lost|unknown; [] when no questions were asked.
    coverage: list[dict[str, Any]] = field(default_factory=list)

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "scope_id": ObjectId(self.scope_id),
            "agent_id": self.agent_id,
            "version": self.version,
            "text": self.text,
            "trigger": self.trigger,
            "actor": self.actor,
            "absorbed_observation_ids": [ObjectId(i) for i in self.absorbed_observation_ids],
            "prompt_version": self.prompt_version,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "duration_ms": self.duration_ms,
            "restored_from": self.restored_from,
            "warning": self.warning,
            "created_at": self.created_at,
            "fidelity": self.fidelity,
            "coverage": list(self.coverage),
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> ConsolidationVersion:
        return cls(
            id=str(doc["_id"]),
            scope_id=str(doc["scope_id"]),
            agent_id=doc["agent_id"],
            version=doc["version"],
            text=doc["text"],
            trigger=doc["trigger"],
            actor=doc.get("actor"),
            absorbed_observation_ids=[str(i) for i in doc.get("absorbed_observation_ids", [])],
            prompt_version=doc.get("prompt_version"),
            model=doc.get("model"),
            prompt_tokens=doc.get("prompt_tokens", 0),
            completion_tokens=doc.get("completion_tokens", 0),
            duration_ms=doc.get("duration_ms", 0),
            restored_from=doc.get("restored_from"),
            warning=doc.get("warning"),
            redacted=doc.get("redacted_at") is not None,
            created_at=doc["created_at"],
            fidelity=doc.get("fidelity"),
            coverage=list(doc.get("coverage") or []),
        )
