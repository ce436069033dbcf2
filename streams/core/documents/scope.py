"""`Scope`: a consolidation boundary: one consolidation text and one observation log."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents._base import EPOCH, ReviewMode, ScopeType, utcnow
from streams.core.ids import new_id


@dataclass
class Scope:
    """A consolidation boundary: one consolidation text and one observation log."""

    agent_id: str
    scope_type: ScopeType
    user_id: str | None = None
    group_id: str | None = None
    name: str | None = None
    display_name: str | None = None
    is_active: bool = True
    consolidation: str | None = None
    consolidation_version: int = 0
    consolidation_updated_at: datetime | None = None
    consolidation_updated_by: str | None = None
    pending_observation_ids: list[str] = field(default_factory=list)
    observation_count: int = 0
    observation_seq: int = 0
    # The log's revision: bumped whenever a stored observation's text or liveness changes
    # (edit, delete, purge, move; not an add). An add's window (`streams.memory.window`)
    # is reused while it stands.
    log_rev: int = 0
    consolidation_threshold: int = 10
    consolidation_max_words: int = 500
    extraction_prompt: str | None = None
    consolidation_prompt: str | None = None
    propagation_prompt: str | None = None
    # The version of the guidance in `extraction_prompt` (group, collective, shard): the
    # resolver reports it without reading the prompt history on every formation.
    guidance_version: int | None = None
    groups: list[dict[str, str]] = field(default_factory=list)  # individual: the user's groups
    # Observations whose old text the consolidation history holds and must lose (deleted,
    # edited, marked private, or a removed copy): a rebuild is pending while any is listed.
    rebuild_observation_ids: list[str] = field(default_factory=list)
    # Sentences every consolidation version holds word for word (`streams.memory.pins`).
    pins: list[str] = field(default_factory=list)
    # Questions this scope's memory must answer (`streams.prompts.questions`), mirrored from
    # the scope's latest question version; None: the agent's default for its scope type.
    questions: list[str] | None = None

    # Which new observations wait for a person: none ("off"), propagated copies, or all.
    review_mode: ReviewMode = "off"
    # Copies this scope's propagation was refused, by flag (pii:*, secret): the scope page.
    propagation_blocked: dict[str, int] = field(default_factory=dict)
    # Retention (`streams.memory.lifecycle`): keep at most this many observations (None: off);
    # the oldest consolidated ones beyond it are purged, and counted here.
    max_observations: int | None = None
    # Consolidation by age: this scope's days (None: its kind's MEMORY_CONSOLIDATE_AFTER_DAYS;
    # 0: never by age).
    consolidate_after_days: int | None = None
    # Lifecycle ranking switches set on this scope (`streams.search.ranking_settings`);
    # a switch left out inherits the agent's.
    ranking: dict[str, bool] = field(default_factory=dict)
    # Limits and models of this scope (`streams.memory.scope_limits`); None: the agent's
    # default for the scope's kind, else the code's.
    item_words: int | None = None
    item_cap: int | None = None
    consolidation_model: str | None = None
    propagation_model: str | None = None
    retention_purged: int = 0
    retention_purged_at: datetime | None = None
    # A user's own scope whose user is being forgotten (set with the tombstone, in the
    # forget's first step): a hand add into it is refused (409 `forgotten`) with no read
    # more, the scope being read already.
    forgotten_at: datetime | None = None
    seq: int = 0
    created_at: datetime = field(default_factory=utcnow)
    last_activity_at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=new_id)

    @property
    def pending_count(self) -> int:
        return len(self.pending_observation_ids)

    @property
    def needs_rebuild(self) -> bool:
        return bool(self.rebuild_observation_ids)

    @property
    def is_shard(self) -> bool:
        return self.scope_type == "collective" and self.name is not None

    @property
    def kind(self) -> str:
        """The scope type, with a shard told apart from the collective memory."""
        return "shard" if self.is_shard else self.scope_type

    @property
    def label(self) -> str:
        """What a person calls this scope: the user's, group's or shard's name."""
        if self.scope_type == "individual":
            return self.display_name or self.user_id or "?"
        if self.scope_type == "group":
            return self.display_name or self.group_id or "?"
        return self.name or "collective"

    @property
    def label_text(self) -> str:
        """Lower-cased ids and names, stored for the scope list's text filter."""
        parts = (self.user_id, self.group_id, self.name, self.display_name)
        return " ".join(p for p in parts if p).lower()

    @property
    def context_key(self) -> str:
        """Who sees this scope in a context: "u:<user>", "g:<group>", or "c" (collective)."""
        if self.scope_type == "individual":
            return f"u:{self.user_id}"
        if self.scope_type == "group":
            return f"g:{self.group_id}"
        return "c"

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "agent_id": self.agent_id,
            "scope_type": self.scope_type,
            "label_text": self.label_text,
            "context_key": self.context_key,
            "user_id": self.user_id,
            "group_id": self.group_id,
            "name": self.name,
            "display_name": self.display_name,
            "is_active": self.is_active,
            "consolidation": self.consolidation,
            "consolidation_version": self.consolidation_version,
            "consolidation_updated_at": self.consolidation_updated_at,
            "consolidation_updated_by": self.consolidation_updated_by,
            "pending_observation_ids": [ObjectId(i) for i in self.pending_observation_ids],
            "observation_count": self.observation_count,
            "observation_seq": self.observation_seq,
            "log_rev": self.log_rev,
            "consolidation_threshold": self.consolidation_threshold,
            "consolidation_max_words": self.consolidation_max_words,
            "extraction_prompt": self.extraction_prompt,
            "consolidation_prompt": self.consolidation_prompt,
            "propagation_prompt": self.propagation_prompt,
            "guidance_version": self.guidance_version,
            "groups": self.groups,
            "rebuild_observation_ids": [ObjectId(i) for i in self.rebuild_observation_ids],
            "pins": list(self.pins),
            "questions": None if self.questions is None else list(self.questions),
            "review_mode": self.review_mode,
            "propagation_blocked": dict(self.propagation_blocked),
            **({"max_observations": self.max_observations} if self.max_observations else {}),
            "consolidate_after_days": self.consolidate_after_days,
            **({"ranking": dict(self.ranking)} if self.ranking else {}),
            **{
                name: value
                for name in ("item_words", "item_cap", "consolidation_model", "propagation_model")
                if (value := getattr(self, name)) is not None
            },
            "retention_purged": self.retention_purged,
            "seq": self.seq,
            "lease_owner": None,
            "lease_until": EPOCH,
            "created_at": self.created_at,
            "last_activity_at": self.last_activity_at,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> Scope:
        return cls(
            id=str(doc["_id"]),
            agent_id=doc["agent_id"],
            scope_type=doc["scope_type"],
            user_id=doc.get("user_id"),
            group_id=doc.get("group_id"),
            name=doc.get("name"),
            display_name=doc.get("display_name"),
            is_active=doc.get("is_active", True),
            consolidation=doc.get("consolidation"),
            consolidation_version=doc.get("consolidation_version", 0),
            consolidation_updated_at=doc.get("consolidation_updated_at"),
            consolidation_updated_by=doc.get("consolidation_updated_by"),
            pending_observation_ids=[str(i) for i in doc.get("pending_observation_ids", [])],
            observation_count=doc.get("observation_count", 0),
            observation_seq=doc.get("observation_seq", 0),
            log_rev=doc.get("log_rev", 0),
            consolidation_threshold=doc.get("consolidation_threshold", 10),
            consolidation_max_words=doc.get("consolidation_max_words", 500),
            extraction_prompt=doc.get("extraction_prompt"),
            consolidation_prompt=doc.get("consolidation_prompt"),
            propagation_prompt=doc.get("propagation_prompt"),
            guidance_version=doc.get("guidance_version"),
            groups=list(doc.get("groups") or []),
            rebuild_observation_ids=[str(i) for i in doc.get("rebuild_observation_ids") or []],
            pins=list(doc.get("pins") or []),
            questions=doc.get("questions"),
            review_mode=doc.get("review_mode") or "off",
            propagation_blocked=dict(doc.get("propagation_blocked") or {}),
            max_observations=doc.get("max_observations"),
            consolidate_after_days=doc.get("consolidate_after_days"),
            ranking=dict(doc.get("ranking") or {}),
            item_words=doc.get("item_words"),
            item_cap=doc.get("item_cap"),
            consolidation_model=doc.get("consolidation_model"),
            propagation_model=doc.get("propagation_model"),
            retention_purged=doc.get("retention_purged", 0),
            retention_purged_at=doc.get("retention_purged_at"),
            forgotten_at=doc.get("forgotten_at"),
            seq=doc.get("seq", 0),
            created_at=doc["created_at"],
            last_activity_at=doc.get("last_activity_at", doc["created_at"]),
        )
