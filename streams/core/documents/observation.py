"""`Observation`: one timestamped piece of information, with the provenance it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from bson import ObjectId

from streams.core.documents._base import ObservationStatus, ReviewStatus, _oid, _str, utcnow
from streams.core.ids import new_id


@dataclass
class Observation:
    """One timestamped piece of information, with the provenance it came from."""

    scope_id: str
    agent_id: str
    content: str
    observed_at: datetime = field(default_factory=utcnow)
    created_at: datetime = field(default_factory=utcnow)
    source_session_id: str | None = None
    source_message_ids: list[str] = field(default_factory=list)
    related_user_ids: list[str] = field(default_factory=list)
    consolidated: bool = False
    private: bool = False
    propagated_from: str | None = None
    deleted_at: datetime | None = None
    deleted_by: str | None = None  # the actor of the deletion, where one was recorded
    # Absorbed by a version once, then put back to pending by a restore: the history
    # still holds its text, so a change to it rebuilds like a consolidated one's.
    restored_to_pending: bool = False
    access_count: int = 0
    last_accessed_at: datetime | None = None
    seq: int = 0
    # The scope and normalized text (`streams.search.dedup.text_key`), on live observations only:
    # a unique index keeps one live observation per fact and scope.
    text_key: str | None = None
    similar_to: str | None = None  # a near duplicate: the observation it resembles

    # What the deterministic detectors found (`streams.guard.detectors`), with the spans on
    # `content` ({"flag", "start", "end"}) that the review queue highlights.
    flags: list[str] = field(default_factory=list)
    flag_spans: list[dict[str, Any]] = field(default_factory=list)
    # Held out of memory: "in_review" (waits for a person), "candidate" (a collective copy
    # waiting for more groups) or "rejected" (kept for the audit, used nowhere). None: live.
    review_status: ReviewStatus | None = None
    # {"reasons": [...], "since": datetime, "supporting_group_ids": [...], and once decided
    # "decision", "decided_by", "decided_at", "note"}.
    review: dict[str, Any] | None = None
    # Lifecycle (`streams.memory.lifecycle`): after `expires_at` in no context or search; the
    # expiry sweep handles it once (`expiry_swept`), and purges it days later.
    expires_at: datetime | None = None
    expiry_swept: bool = False
    useful_count: int = 0  # feedback: a retrieved observation was useful ...
    useless_count: int = 0  # ... or not
    # Observations of the scope this one contradicts (`streams.core.contradictions`), both ways.
    contradicts: list[str] = field(default_factory=list)
    # How it got here (`ORIGINS`) and who added it (the actor: `api:<key>`, `ui:<user>`,
    # `model:<job>`), set at write; absent on older documents (`origin_of` infers it).
    origin: str | None = None
    added_by: str | None = None
    # Supersession (`streams.memory.supersession`): a newer observation of the scope says
    # the same thing with another value; this one was true until `valid_until`. Not
    # removed (the log and `as_of` still show it), just not current: in no context,
    # search (unless asked), consolidation or pending list.
    superseded_by: str | None = None
    valid_until: datetime | None = None
    id: str = field(default_factory=new_id)
    # Not stored: an add that matched a live observation answers with that one, so marked.
    duplicate: bool = field(default=False, compare=False)

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or utcnow())

    @property
    def expired(self) -> bool:
        return self.is_expired()

    @property
    def status(self) -> ObservationStatus:
        if self.review_status is not None:
            return self.review_status
        return "consolidated" if self.consolidated else "pending"

    @property
    def live(self) -> bool:
        """What memory may use: pending or consolidated, not deleted."""
        return self.deleted_at is None and self.review_status is None

    @property
    def superseded(self) -> bool:
        return self.superseded_by is not None

    @property
    def current(self) -> bool:
        """Live and not superseded: what context, search and consolidation use."""
        return self.live and self.superseded_by is None

    def current_at(self, when: datetime) -> bool:
        """Live, and not yet superseded at `when` (what `as_of` sees)."""
        return self.live and (self.valid_until is None or self.valid_until > when)

    @property
    def held(self) -> bool:
        """In review, a candidate or rejected: in no context, search, consolidation,
        propagation or pending count."""
        return self.review_status is not None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "scope_id": ObjectId(self.scope_id),
            "agent_id": self.agent_id,
            "content": self.content,
            "observed_at": self.observed_at,
            "created_at": self.created_at,
            "source_session_id": self.source_session_id,
            "source_message_ids": list(self.source_message_ids),
            "related_user_ids": list(self.related_user_ids),
            "consolidated": self.consolidated,
            "private": self.private,
            "propagated_from": _oid(self.propagated_from),
            "deleted_at": self.deleted_at,
            "deleted_by": self.deleted_by,
            "restored_to_pending": self.restored_to_pending,
            "access_count": self.access_count,
            "last_accessed_at": self.last_accessed_at,
            "seq": self.seq,
            "similar_to": _oid(self.similar_to),
            # Absent, not null, when unset: the unique index holds only documents that have it.
            **({"text_key": self.text_key} if self.text_key else {}),
            "flags": list(self.flags),
            "flag_spans": list(self.flag_spans),
            "review_status": self.review_status,
            "review": self.review,
            "contradicts": list(self.contradicts),
            **({"origin": self.origin} if self.origin else {}),
            **({"added_by": self.added_by} if self.added_by else {}),
            # Absent when unset: the sparse index holds only superseded observations.
            **(
                {"superseded_by": ObjectId(self.superseded_by), "valid_until": self.valid_until}
                if self.superseded_by
                else {}
            ),
            # Absent when unset: the sparse expiry indexes hold only observations that expire;
            # `expiry_due` is the sweep's to-do mark (unset once the expiry is handled).
            **(
                {"expires_at": self.expires_at, "expiry_due": self.expires_at}
                if self.expires_at is not None and not self.expiry_swept
                else {"expires_at": self.expires_at}
                if self.expires_at is not None
                else {}
            ),
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> Observation:
        return cls(
            id=str(doc["_id"]),
            scope_id=str(doc["scope_id"]),
            agent_id=doc["agent_id"],
            content=doc["content"],
            observed_at=doc["observed_at"],
            created_at=doc["created_at"],
            source_session_id=doc.get("source_session_id"),
            source_message_ids=list(doc.get("source_message_ids", [])),
            related_user_ids=list(doc.get("related_user_ids", [])),
            consolidated=doc.get("consolidated", False),
            private=doc.get("private", False),
            propagated_from=_str(doc.get("propagated_from")),
            restored_to_pending=doc.get("restored_to_pending", False),
            deleted_at=doc.get("deleted_at"),
            deleted_by=doc.get("deleted_by"),
            access_count=doc.get("access_count", 0),
            last_accessed_at=doc.get("last_accessed_at"),
            seq=doc.get("seq", 0),
            text_key=doc.get("text_key"),
            similar_to=_str(doc.get("similar_to")),
            flags=list(doc.get("flags") or []),
            flag_spans=list(doc.get("flag_spans") or []),
            review_status=doc.get("review_status"),
            review=doc.get("review"),
            contradicts=[str(i) for i in doc.get("contradicts") or []],
            superseded_by=_str(doc.get("superseded_by")),
            valid_until=doc.get("valid_until"),
            expires_at=doc.get("expires_at"),
            expiry_swept=doc.get("expires_at") is not None and "expiry_due" not in doc,
            useful_count=doc.get("useful_count", 0),
            useless_count=doc.get("useless_count", 0),
            origin=doc.get("origin"),
            added_by=doc.get("added_by"),
        )


# How an observation got into its scope (the screen's `WriteOrigin`, and "edit"): formed
# from a conversation, added through the API (a key, the client, MCP), added by a person
# (the UI: "operator"), imported, copied by propagation, moved from another scope,
# migrated from the legacy table, or an edit held for review.
ObservationOrigin = Literal[
    "extraction",
    "api",
    "operator",
    "import",
    "propagation",
    "move",
    "migration",
    "edit",
    "restore",
]
ORIGINS: tuple[str, ...] = get_args(ObservationOrigin)


def observation_origin(observation: Observation) -> str:
    """The stored origin, or for documents written before it was, the best inference."""
    if observation.origin:
        return observation.origin
    if observation.propagated_from:
        return "propagation"
    if observation.source_session_id:
        return "extraction"
    return "operator" if (observation.added_by or "").startswith("ui:") else "api"
