"""`PromptVersion`: one saved version of a prompt template, never changed afterwards."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents._base import _oid, _str, utcnow
from streams.core.ids import new_id

PromptKind = Literal["extraction", "consolidation", "propagation"]
PROMPT_KINDS: tuple[PromptKind, ...] = ("extraction", "consolidation", "propagation")


@dataclass
class PromptVersion:
    """One saved version of a prompt template, never changed afterwards.

    `scope_id` None is the agent's default; a scope id is that scope's override.
    Keeping every version is what lets history show who changed what, and when.
    """

    agent_id: str
    kind: PromptKind
    version: int
    text: str
    author: str
    scope_id: str | None = None
    reverted_from: int | None = None
    cleared: bool = False  # this version removes the override: the level below applies again
    created_at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=new_id)

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "agent_id": self.agent_id,
            "scope_id": _oid(self.scope_id),
            "cleared": self.cleared,
            "kind": self.kind,
            "version": self.version,
            "text": self.text,
            "author": self.author,
            "created_at": self.created_at,
            "reverted_from": self.reverted_from,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> PromptVersion:
        return cls(
            id=str(doc["_id"]),
            agent_id=doc["agent_id"],
            scope_id=_str(doc.get("scope_id")),
            kind=doc["kind"],
            version=doc["version"],
            text=doc["text"],
            author=doc["author"],
            created_at=doc["created_at"],
            reverted_from=doc.get("reverted_from"),
            cleared=doc.get("cleared", False),
        )
