"""Request and response schemas of `/api/v1`, one `XIn` and one `XOut` per object.

Inputs forbid unknown fields, so a misspelt field is a 422 that names it rather
than a silently ignored setting. Outputs mirror the "Objects" of
`shared/spec/api.md` exactly, read from the domain's documents by attribute.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    PlainSerializer,
    StrictBool,
    StrictInt,
    StringConstraints,
    Tag,
)

from memory_admin.api.errors import register_union_tags
from streams.core.documents import MAX_CONTENT_CHARS, JobKind, JobStatus, Observation, ScopeType
from streams.core.pagination import CURSOR_DESCRIPTION, CURSOR_PATTERN, DEFAULT_LIMIT, MAX_LIMIT
from streams.core.times import RANGE_TEXT, in_range
from streams.core.visibility import shown_text
from streams.memory.observation_batch import MAX_BATCH, MAX_CLIENT_ID_CHARS

# External ids (agent, user, group, session, message): strings of 1..128 characters.
ExternalId = Annotated[str, StringConstraints(min_length=1, max_length=128)]
# Text the domain strips must hold something besides whitespace; the schema says so.
NOT_BLANK = r"\S"
DisplayName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=NOT_BLANK)
]
Prompt = Annotated[str, StringConstraints(max_length=20_000)]
MAX_MESSAGES = 500  # per ingest request
MAX_VERSION = 2**53  # version numbers: far beyond any real history, well inside BSON int64
MAX_GROUPS = 100


def iso_utc(value: datetime) -> str:
    """UTC with milliseconds and a `Z`: what the store keeps, so a created object and
    the same object read back are byte-for-byte equal."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# Output times: ISO 8601 in UTC, millisecond precision (MongoDB's own).
Time = Annotated[datetime, PlainSerializer(iso_utc, return_type=str)]

_ISO_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([Zz]|[+-]\d{2}:?\d{2})$"
)


def _iso_text(value: Any) -> Any:
    """Times come as ISO 8601 text with a zone, as the OpenAPI says (`format: date-time`);
    pydantic alone would also take numbers and digit strings as Unix times."""
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_TIME.match(value)):
        return value
    raise ValueError("must be an ISO 8601 date-time with a timezone, e.g. 2024-05-01T12:00:00Z")


def _in_utc(value: datetime) -> datetime:
    """Shifted to UTC here and held to the supported range (`streams.core.times`), so a
    time past it (`2106-02-08`, or a zone shift past year 9999) is a 422 naming the
    field, never an overflow later."""
    try:
        shifted = value.astimezone(UTC)
    except OverflowError:
        shifted = None
    if shifted is None or not in_range(shifted):
        raise ValueError(f"must fall within {RANGE_TEXT} once shifted to UTC")
    return shifted


# Input times: ISO 8601 date-times with a timezone, nothing else; handed on in UTC.
IsoTime = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(_in_utc)]


class InSchema(Schema):
    """Base of every input: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


# -- errors ------------------------------------------------------------------------------


class ErrorBody(Schema):
    code: str = Field(..., examples=["not_found"])
    message: str
    details: Any = None


class ErrorOut(Schema):
    error: ErrorBody


# -- health ------------------------------------------------------------------------------


class HealthOut(Schema):
    status: Literal["ok"]
    store: Literal["ok"]
    llm: str
    queue: Literal["eager", "broker"]
    store_mode: str
    # With a model server: {"output": "json_schema"|"json_object"|"text", "temperature": bool}.
    llm_output: dict[str, Any] | None = None
    warnings: list[str] = []
    rate_limit: Literal["off", "per_process", "shared", "per_process_fallback"] = Field(
        description="How the per-key limit is counted: `per_process_fallback` while the "
        "shared cache (Redis) is down; never unlimited"
    )


# -- lists -------------------------------------------------------------------------------


class PageQuery(Schema):
    """`?limit=&cursor=` of every list; a cursor is opaque and only ever passed back."""

    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(
        None, max_length=512, pattern=CURSOR_PATTERN, description=CURSOR_DESCRIPTION
    )


# -- scopes ------------------------------------------------------------------------------


class ScopeListQuery(PageQuery):
    scope_type: ScopeType | Literal["shard"] | None = Field(
        None, description="`shard`: the agent's named collective shards."
    )
    shard: ExternalId | None = Field(
        None, description="One collective shard by its name (e.g. `product-feedback`)."
    )
    user_id: ExternalId | None = None
    group_id: ExternalId | None = None
    q: str | None = Field(None, max_length=200, description="Text in the scope's ids or names.")


class GroupScopeIn(InSchema):
    scope_type: Literal["group"]
    group_id: ExternalId
    display_name: DisplayName | None = None


class CollectiveShardIn(InSchema):
    scope_type: Literal["collective"]
    name: ExternalId = Field(..., description="The shard's name, e.g. `product-feedback`.")
    extraction_prompt: Prompt | None = None


ScopeCreateIn = Annotated[GroupScopeIn | CollectiveShardIn, Field(discriminator="scope_type")]
register_union_tags("group", "collective")


class ScopeOut(Schema):
    id: str
    agent_id: str
    scope_type: ScopeType
    user_id: str | None
    group_id: str | None
    name: str | None
    display_name: str | None
    is_active: bool = Field(description="false: paused (nothing routed, not in context or search)")
    needs_rebuild: bool = Field(
        description="a source was deleted, edited or made private: a rebuild job is pending"
    )
    consolidation: str | None
    consolidation_version: int
    consolidation_updated_at: Time | None
    pending_count: int
    observation_count: int
    consolidation_threshold: int
    consolidation_max_words: int
    extraction_prompt: str | None
    consolidation_prompt: str | None
    propagation_prompt: str | None
    pins: list[str] = Field(
        default_factory=list,
        description="Sentences every later consolidation version holds word for word.",
    )
    questions: list[str] | None = Field(
        None,
        description="This scope's questions its memory must answer (at most 5); null: the "
        "agent's default for its scope type (`/agents/{agent_id}/questions/{scope_kind}`).",
    )
    review_mode: Literal["off", "propagated", "all"] = Field(
        description="Which new observations wait for a person: none, propagated copies, or "
        "everything from extraction, propagation and API keys"
    )
    max_observations: int | None = Field(
        None,
        description="Retention: the scope keeps at most this many observations; the oldest "
        "consolidated ones beyond it are purged (never pending, pinned or in-review ones). "
        "null: off.",
    )
    consolidate_after_days: int | None = Field(
        None,
        description="Consolidation by age: a pending observation older than this many days "
        "is folded below the threshold. null: the scope type's MEMORY_CONSOLIDATE_AFTER_DAYS; "
        "0: never by age.",
    )
    retention_purged: int = Field(0, description="Observations retention has purged so far.")
    created_at: Time
    last_activity_at: Time


class ScopePageOut(Schema):
    items: list[ScopeOut]
    next_cursor: str | None


class ScopePinsIn(InSchema):
    pins: list[
        Annotated[str, StringConstraints(min_length=1, max_length=1_000, pattern=NOT_BLANK)]
    ] = Field(
        ...,
        max_length=50,
        description="The scope's pinned sentences (replacing any before): every later "
        "consolidation version (run, rebuild, restore) holds each word for word. They count "
        "toward `consolidation_max_words`: a set over it is a 422. [] unpins all.",
    )


class ScopePatchIn(InSchema):
    """Only the fields sent change; a prompt set to null falls back to the agent's default."""

    extraction_prompt: Prompt | None = Field(
        None,
        description="An individual scope's extraction template (the whole prompt); for a "
        "group, the collective or a shard, guidance placed in that scope's section of the "
        "one extraction prompt.",
    )
    consolidation_prompt: Prompt | None = None
    propagation_prompt: Prompt | None = Field(
        None,
        description="The propagation template used when this scope (individual or group) "
        "is the source; null falls back to the agent's default.",
    )
    is_active: StrictBool = None  # type: ignore[assignment]
    review_mode: Literal["off", "propagated", "all"] = Field(
        None,  # type: ignore[arg-type]
        description="Which new observations wait for review (needs the `review` permission).",
    )
    consolidation_threshold: Annotated[StrictInt, Field(ge=1, le=1000)] = None  # type: ignore[assignment]
    consolidation_max_words: Annotated[StrictInt, Field(ge=50, le=5000)] = None  # type: ignore[assignment]
    max_observations: Annotated[StrictInt, Field(ge=10, le=1_000_000)] | None = Field(
        None,
        description="Retention: keep at most this many observations (the oldest consolidated "
        "ones beyond it are purged by the periodic sweep); null turns it off.",
    )
    consolidate_after_days: Annotated[StrictInt, Field(ge=0, le=3650)] | None = Field(
        None,
        description="Consolidation by age: days a pending observation may wait below the "
        "threshold (0: never by age); null falls back to the scope type's default.",
    )
    questions: list[Any] | None = Field(
        None,
        description="Questions this scope's memory must answer, at most 5, each 1 to 200 "
        "characters (a new version; the consolidation call answers them); null falls back "
        "to the agent's default for the scope type.",
    )
    save_anyway: StrictBool = Field(
        False,
        description="Save a consolidation or propagation prompt even when it fails prompt "
        "checks of its kind that the prompt in effect passes (else 422 naming the field).",
    )
    consolidation: Annotated[str, StringConstraints(max_length=20_000, pattern=NOT_BLANK)] = Field(
        None,  # type: ignore[arg-type]
        description="A hand edit of the consolidation text; needs `expected_version`.",
    )
    expected_version: Annotated[StrictInt, Field(ge=0, le=MAX_VERSION)] = Field(
        None,  # type: ignore[arg-type]
        description="The `consolidation_version` the edit started from (409 if it moved on).",
    )


# -- observations ------------------------------------------------------------------------


class ObservationListQuery(PageQuery):
    status: Literal["pending", "consolidated", "in_review", "candidate", "rejected", "all"] = "all"
    include_deleted: bool = False


ObservationContent = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=NOT_BLANK)
]


class ObservationIn(InSchema):
    content: ObservationContent
    client_id: (
        Annotated[str, StringConstraints(min_length=1, max_length=MAX_CLIENT_ID_CHARS)] | None
    ) = Field(
        None,
        description="The caller's key of this observation, unique in the scope (shared with "
        "batch items' `client_id`): a repeat with a stored `client_id` is not stored again "
        "and answers 200 with the observation the first request created; the same key with "
        "other content (compared as sent, whitespace runs as one space) is 409 "
        "`client_id_reused` naming that observation. Without it every request adds one.",
    )
    private: StrictBool = False
    observed_at: IsoTime | None = Field(
        None, description="When it was observed (ISO 8601 with a timezone); default now."
    )
    expires_at: IsoTime | None = Field(
        None,
        description="After this time the observation is in no context or search; a sweep "
        "then rebuilds what absorbed it and purges it days later. Must be in the future.",
    )


class ReviewOut(Schema):
    reasons: list[str] = Field(
        description='"propagated", "flag:<flag>", "needs_more_groups", "api" or "review_mode"'
    )
    since: Time | None = None
    supporting_group_ids: list[str] = Field(
        default_factory=list, description="Groups that supplied a collective candidate's fact"
    )
    decision: Literal["approve", "reject"] | None = None
    decided_by: str | None = None
    decided_at: Time | None = None
    note: str | None = None


class ObservationOut(Schema):
    id: str
    scope_id: str
    content: str | None = Field(
        description="The text; null once the observation is removed (deleted or expired): "
        "removed text is on no surface (the one visibility rule)."
    )

    @staticmethod
    def resolve_content(obj: Any) -> str | None:
        if isinstance(obj, Observation):
            return shown_text(obj)
        return obj.get("content") if isinstance(obj, dict) else obj.content

    observed_at: Time
    created_at: Time
    source_session_id: str | None
    source_message_ids: list[str]
    related_user_ids: list[str]
    status: Literal["pending", "consolidated", "in_review", "candidate", "rejected"]
    private: bool
    propagated_from: str | None
    access_count: int
    last_accessed_at: Time | None
    deleted: bool
    similar_to: str | None = Field(
        None, description="A near duplicate: the observation of the scope it resembles."
    )
    flags: list[str] = Field(
        description="What the deterministic detectors found: pii:email, pii:phone, pii:iban, "
        "pii:card, secret (redacted at write), instruction"
    )
    review: ReviewOut | None = Field(
        description="Why and since when it waits (or waited) for review; null when it never did"
    )
    expires_at: Time | None = Field(None, description="When it leaves memory (null: never).")
    expired: bool = Field(False, description="Past its `expires_at`: in no context or search.")
    useful_count: int = Field(0, description="Feedback: times it was found useful.")
    useless_count: int = Field(0, description="Feedback: times it was found not useful.")
    contradicts: list[str] = Field(
        default_factory=list,
        description="Observations of the scope this one contradicts (same subject, another "
        "value), flagged on both sides; in a shared scope the newer waits for review.",
    )


class EarlierTextOut(Schema):
    content: str = Field(..., description="The text the observation held before an edit.")
    actor: str | None = Field(..., description="Who made the edit that replaced it.")
    replaced_at: Time


class ObservationHistoryOut(Schema):
    items: list[EarlierTextOut] = Field(..., description="Newest first.")
    next_cursor: str | None


class ObservationPageOut(Schema):
    items: list[ObservationOut]
    next_cursor: str | None


class ObservationBatchItemIn(InSchema):
    client_id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CLIENT_ID_CHARS)] = (
        Field(
            ...,
            description="The caller's key of this item, unique in the scope: a re-sent item "
            "with a stored `client_id` is not stored again, the answer carries the observation "
            "it created the first time; with other content the batch is 409 "
            "`client_id_reused`, listing each such item, and nothing is stored.",
        )
    )
    content: ObservationContent
    private: StrictBool = False
    observed_at: IsoTime | None = Field(
        None, description="When it was observed (ISO 8601 with a timezone); default now."
    )
    expires_at: IsoTime | None = Field(
        None,
        description="After this time the observation is in no context or search; a sweep "
        "then rebuilds what absorbed it and purges it days later. Must be in the future.",
    )


class ObservationBatchIn(InSchema):
    items: list[ObservationBatchItemIn] = Field(
        ...,
        min_length=1,
        max_length=MAX_BATCH,
        description=f"1 to {MAX_BATCH} observations, stored in one transaction: all or none. "
        "Each `client_id` at most once per batch.",
    )


def _observation_body_kind(value: Any) -> str:
    has_items = isinstance(value, dict) and "items" in value
    return "observation_batch" if has_items else "single_observation"


# One observation (`{"content", ...}`) or a batch (`{"items": [...]}`), told apart by `items`.
ObservationWriteIn = Annotated[
    Annotated[ObservationIn, Tag("single_observation")]
    | Annotated[ObservationBatchIn, Tag("observation_batch")],
    Discriminator(_observation_body_kind),
]
register_union_tags("single_observation", "observation_batch")


class ObservationBatchItemOut(ObservationOut):
    client_id: str
    created: bool = Field(
        ..., description="False when the `client_id` was stored before (a re-send)."
    )
    duplicate_of: str | None = Field(
        None,
        description="Set when the item's text (normalized) matched a live observation of "
        "the scope: nothing new was stored and the item is that observation.",
    )


class ObservationBatchOut(Schema):
    items: list[ObservationBatchItemOut] = Field(..., description="In the order of the request.")
    created: int = Field(..., description="How many items were stored by this request.")


class ObservationFeedbackIn(InSchema):
    useful: StrictBool = Field(..., description="Whether the retrieved observation helped.")
    context_call_id: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{24}$",
        description="The context call that retrieved it (`context_call_id` of the answer): "
        "that call's feedback on this observation counts once.",
    )


class ObservationPatchIn(InSchema):
    content: ObservationContent = None  # type: ignore[assignment]
    private: StrictBool = None  # type: ignore[assignment]
    expires_at: IsoTime | None = Field(
        None,
        description="Set the expiry (a past time expires it at once) or clear it with null; "
        "409 once the expiry sweep has handled the observation.",
    )


# -- conversation ingest -----------------------------------------------------------------


class GroupIn(InSchema):
    id: ExternalId
    name: DisplayName | None = None


class MessageIn(InSchema):
    id: ExternalId
    role: Literal["user", "assistant", "tool", "system"]
    content: str = Field(
        ...,
        description="At most MEMORY_MESSAGE_MAX_CHARS characters (default 32,000); a longer "
        "message answers 422 naming its index.",
    )
    created_at: IsoTime | None = Field(
        None, description="When it was said (ISO 8601 with a timezone); default now."
    )
    user_id: ExternalId | None = Field(
        None,
        description="Who said it, in a conversation with several people; default the "
        "request's `user_id`. Each speaker's observations go to their own individual "
        "memory, and forgetting them removes what they said.",
    )
    user_name: DisplayName | None = Field(
        None,
        description="That speaker's display name; default the request's `user_name` "
        "when the speaker is the request's user.",
    )


class IngestIn(InSchema):
    user_id: ExternalId
    user_name: DisplayName | None = None
    groups: list[GroupIn] = Field(default_factory=list, max_length=MAX_GROUPS)
    messages: list[MessageIn] = Field(..., min_length=1, max_length=MAX_MESSAGES)


class RefusedOut(Schema):
    """What a tombstone refused: a forgotten user's data is not stored."""

    user_id: str
    reason: str


class IngestOut(Schema):
    session_id: str
    accepted: int
    duplicates: int
    unformed_messages: int
    formation_job_id: str | None
    refused: list[RefusedOut] = Field(default_factory=list)


class JobIdOut(Schema):
    job_id: str


# -- consolidations ----------------------------------------------------------------------


class FidelityOut(Schema):
    unstated_observation_ids: list[str]
    dropped_sentences: list[str]


class CoverageOut(Schema):
    question: str
    answer: str | None = Field(
        description="As the consolidation call answered it; null when not stated, lost or unknown"
    )
    status: Literal["answered", "unanswered", "lost", "unknown"] = Field(
        description="lost: the previous version answered it; unknown: the answer's "
        "ANSWERS: trailer was malformed (nothing is guessed)"
    )


class ConsolidationVersionOut(Schema):
    version: int
    text: str
    trigger: str
    actor: str | None
    absorbed_observation_ids: list[str]
    prompt_version: int | None
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int
    restored_from: int | None
    warning: str | None
    redacted: bool
    created_at: Time
    # What the text no longer states: {"unstated_observation_ids", "dropped_sentences"}
    # (empty lists for versions written before it was recorded).
    fidelity: FidelityOut
    # The scope's questions as this version answers them ([] when none were set).
    coverage: list[CoverageOut] = Field(default_factory=list)
    loses_answer: bool = Field(False, description="true: a question this version no longer answers")

    @staticmethod
    def resolve_loses_answer(obj: Any) -> bool:
        return any(c.get("status") == "lost" for c in getattr(obj, "coverage", None) or [])

    @staticmethod
    def resolve_fidelity(obj: Any) -> dict[str, list[str]]:
        found = getattr(obj, "fidelity", None) or {}
        return {
            "unstated_observation_ids": list(found.get("unstated_observation_ids") or []),
            "dropped_sentences": list(found.get("dropped_sentences") or []),
        }


class ConsolidationPageOut(Schema):
    items: list[ConsolidationVersionOut]
    next_cursor: str | None


# -- jobs --------------------------------------------------------------------------------


class JobOut(Schema):
    id: str
    kind: JobKind
    status: JobStatus
    scope_id: str | None
    session_id: str | None
    created_at: Time
    started_at: Time | None
    finished_at: Time | None
    error: str | None
    llm_calls: int
    result: dict[str, Any]


def error_responses(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error statuses an operation declares, for the OpenAPI document."""
    return dict.fromkeys(statuses, ErrorOut)


# -- review ------------------------------------------------------------------------------


class ReviewQueueQuery(PageQuery):
    scope_id: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    reason: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    status: Literal["in_review", "candidate"] = "in_review"


ReviewNote = Annotated[str, StringConstraints(max_length=2000)]


class ReviewDecisionIn(InSchema):
    decision: Literal["approve", "reject"]
    content: ObservationContent | None = Field(
        None, description="Approve with this text instead (at most 50 words)."
    )
    note: ReviewNote | None = None


class ReviewBulkIn(InSchema):
    ids: list[Annotated[str, StringConstraints(min_length=1, max_length=64)]] = Field(
        ..., min_length=1, max_length=500
    )
    decision: Literal["approve", "reject"]
    note: ReviewNote | None = None


class ReviewBulkOut(Schema):
    approved: int
    rejected: int
    skipped: list[str]


# -- questions memory must answer ----------------------------------------------------------


class QuestionsIn(InSchema):
    questions: list[Any] | None = Field(
        ...,
        description="At most 5 questions, each 1 to 200 characters; null removes the "
        "default (scopes of this kind then ask none unless they set their own).",
    )


class QuestionsOut(Schema):
    scope_kind: Literal["individual", "group", "collective", "shard"]
    questions: list[str]
    version: int = Field(description="0: never saved")
    author: str | None = None
    created_at: Time | None = None
