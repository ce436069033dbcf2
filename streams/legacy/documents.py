"""The earlier collections' documents, as the migration reads them, and its report.

Converters are lenient on purpose: a legacy document with a missing or odd field is
read as far as it goes, and the migration skips it with a reason instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId

LEGACY_MEMORY_TYPES = ("episode", "directive", "fact", "suggestion")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(v) for v in value if v is not None]


def _id(value: Any) -> str | None:
    """An id as text: the legacy ids are ObjectIds (their 24-hex form), sometimes strings."""
    if isinstance(value, ObjectId):
        return str(value)
    return value if isinstance(value, str) else None


def _ids(value: Any) -> list[str]:
    """A list of ids as text (the legacy lists hold ObjectIds, sometimes their strings)."""
    if not isinstance(value, list):
        return []
    return [text for text in (_id(v) for v in value) if text is not None]


def _time(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class LegacyItem:
    """One `memory_sessions` document: one extracted item."""

    id: str
    agent_id: str | None
    memory_type: str | None
    content: str | None
    source_session_id: str | None
    source_message_ids: list[str]
    related_users: list[str]
    shard_id: str | None
    created_at: datetime | None

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> LegacyItem:
        return cls(
            id=str(doc["_id"]),
            agent_id=_id(doc.get("agent_id")),
            memory_type=_text(doc.get("memory_type")),
            content=_text(doc.get("content")),
            source_session_id=_id(doc.get("source_session_id")),
            source_message_ids=_strings(doc.get("source_message_ids")),
            related_users=_ids(doc.get("related_users")),
            shard_id=_id(doc.get("shard_id")),
            created_at=_time(doc.get("created_at")),
        )


@dataclass(frozen=True)
class LegacyUser:
    """One `memory_user` document: an agent's consolidated memory of one user."""

    id: str
    agent_id: str | None
    user_id: str | None
    content: str | None
    unabsorbed_memory_ids: list[str]
    last_updated_at: datetime | None = None

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> LegacyUser:
        return cls(
            id=str(doc["_id"]),
            agent_id=_id(doc.get("agent_id")),
            user_id=_id(doc.get("user_id")),
            content=_text(doc.get("content")),
            unabsorbed_memory_ids=_ids(doc.get("unabsorbed_memory_ids")),
            last_updated_at=_time(doc.get("last_updated_at")),
        )


@dataclass(frozen=True)
class LegacyShard:
    """One `memory_agent` document: one shard of an agent's collective memory."""

    id: str
    agent_id: str | None
    shard_name: str | None
    extraction_prompt: str | None
    is_active: bool
    content: str | None
    unabsorbed_memory_ids: list[str]
    facts: list[str]
    last_updated_at: datetime | None = None

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> LegacyShard:
        return cls(
            id=str(doc["_id"]),
            agent_id=_id(doc.get("agent_id")),
            shard_name=_text(doc.get("shard_name")),
            extraction_prompt=_text(doc.get("extraction_prompt")),
            is_active=doc.get("is_active", True) is not False,
            content=_text(doc.get("content")),
            unabsorbed_memory_ids=_ids(doc.get("unabsorbed_memory_ids")),
            facts=_ids(doc.get("facts")),
            last_updated_at=_time(doc.get("last_updated_at")),
        )


@dataclass
class CollectionReport:
    """What the migration did with one legacy collection.

    Every document read is counted exactly once: written, already there (an earlier
    run wrote it), or skipped with a reason. `consolidations` counts the version-1
    histories written from its consolidated texts.
    """

    read: int = 0
    written: int = 0
    existing: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    consolidations: int = 0
    notes: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def note(self, what: str, count: int = 1) -> None:
        self.notes[what] = self.notes.get(what, 0) + count

    @property
    def balanced(self) -> bool:
        return self.read == self.written + self.existing + sum(self.skipped.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "written": self.written,
            "existing": self.existing,
            "skipped": dict(sorted(self.skipped.items())),
            "consolidations": self.consolidations,
            "notes": dict(sorted(self.notes.items())),
            "balanced": self.balanced,
        }


@dataclass
class LegacyReport:
    """The validation report: per legacy collection, read = written + already + skipped."""

    source_db: str
    dry_run: bool
    collections: dict[str, CollectionReport]

    @property
    def balanced(self) -> bool:
        return all(c.balanced for c in self.collections.values())

    @property
    def written(self) -> int:
        return sum(c.written + c.consolidations for c in self.collections.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "source_db": self.source_db,
            "dry_run": self.dry_run,
            "balanced": self.balanced,
            "collections": {name: c.as_dict() for name, c in self.collections.items()},
        }
