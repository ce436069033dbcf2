"""The domain's documents and their converters to and from MongoDB.

Outside `streams` every id is a 24-hex string; the converters here are the only
place where ObjectIds and strings meet.

Long because: every stored document's shape and its Mongo mapping share the field helpers at the
top; a split per document is planned (issue 41).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from bson import ObjectId

from streams.core.ids import new_id
from streams.core.job_kinds import JobKind as JobKind  # declared with its registry

ScopeType = Literal["individual", "group", "collective"]
ReviewMode = Literal["off", "propagated", "all"]
REVIEW_MODES: tuple[str, ...] = ("off", "propagated", "all")
ReviewStatus = Literal["in_review", "candidate", "rejected"]
ObservationStatus = Literal["pending", "consolidated", "in_review", "candidate", "rejected"]
SCOPE_TYPES: tuple[ScopeType, ...] = ("individual", "group", "collective")
JobStatus = Literal["queued", "running", "succeeded", "failed"]


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_CONTENT_CHARS = 4000  # an observation's text, as stored


def utcnow() -> datetime:
    """Now in UTC, to the millisecond: what MongoDB stores, so a read-back compares equal."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _oid(value: str | None) -> ObjectId | None:
    return ObjectId(value) if value else None


def _str(value: ObjectId | None) -> str | None:
    return str(value) if value is not None else None


@dataclass
class Agent:
    """An agent the store has seen, with the counters the dashboard shows."""

    id: str
    scope_count: int = 0
    observation_count: int = 0
    pending_count: int = 0
    scope_seq: int = 0
    created_at: datetime = field(default_factory=utcnow)
    last_activity_at: datetime = field(default_factory=utcnow)
    # The chat proxy offers `search_memory` as a function tool ("search_memory") or not ("off").
    memory_tool: str = "off"
    # Lifecycle ranking switches set for the agent (`streams.search.ranking_settings`):
    # a switch left out inherits the code's default.
    ranking: dict[str, bool] = field(default_factory=dict)
    # Limits and models (`streams.memory.scope_limits`): the extraction model (None: the
    # code's), and per scope kind the defaults its scopes take ({kind: {field: value}}).
    extraction_model: str | None = None
    scope_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> Agent:
        return cls(
            id=doc["_id"],
            memory_tool=doc.get("memory_tool") or "off",
            ranking=dict(doc.get("ranking") or {}),
            extraction_model=doc.get("extraction_model"),
            scope_defaults=dict(doc.get("scope_defaults") or {}),
            scope_seq=doc.get("scope_seq", 0),
            scope_count=doc.get("scope_count", 0),
            observation_count=doc.get("observation_count", 0),
            pending_count=doc.get("pending_count", 0),
            created_at=doc["created_at"],
            last_activity_at=doc.get("last_activity_at", doc["created_at"]),
        )


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
ORIGINS = (
    "extraction",
    "api",
    "operator",
    "import",
    "propagation",
    "move",
    "migration",
    "edit",
    "restore",
)


def observation_origin(observation: Observation) -> str:
    """The stored origin, or for documents written before it was, the best inference."""
    if observation.origin:
        return observation.origin
    if observation.propagated_from:
        return "propagation"
    if observation.source_session_id:
        return "extraction"
    return "operator" if (observation.added_by or "").startswith("ui:") else "api"


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
