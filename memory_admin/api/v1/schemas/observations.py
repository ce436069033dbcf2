"""Observations: single and batch writes, feedback, edits, history, pages."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import Discriminator, StrictBool, StringConstraints, Tag

from memory_admin.api.errors import register_union_tags
from memory_admin.api.v1.schemas.common import NOT_BLANK, InSchema, IsoTime, PageQuery, Time
from streams.core.documents import (
    MAX_CONTENT_CHARS,
    Observation,
    ObservationOrigin,
    observation_origin,
)
from streams.core.flag_kinds import flags_described
from streams.core.visibility import shown_text
from streams.memory.observation_batch import MAX_BATCH, MAX_CLIENT_ID_CHARS


class ObservationListQuery(PageQuery):
    status: Literal["pending", "consolidated", "in_review", "candidate", "rejected", "all"] = "all"
    include_deleted: bool = False
    include_superseded: bool = Field(
        False, description="Also list superseded observations (`superseded_by` set)."
    )
    unused_days: int | None = Field(
        None,
        ge=1,
        le=3650,
        description="Only those no context or search retrieved in this many days (and older).",
    )


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


SCOPES_ATTRIBUTE = "observation_scopes"


def named_scopes(request: Any, scopes: Any) -> None:
    """Lend the answer's resolvers the scopes the endpoint already read (no read per item)."""
    known = getattr(request, SCOPES_ATTRIBUTE, None) or {}
    setattr(request, SCOPES_ATTRIBUTE, {**known, **{s.id: s for s in scopes}})


def _scope_of(obj: Any, context: Any) -> Any:
    request = context.get("request") if isinstance(context, dict) else None
    scopes = getattr(request, SCOPES_ATTRIBUTE, None) or {}
    scope_id = obj.get("scope_id") if isinstance(obj, dict) else getattr(obj, "scope_id", None)
    return scopes.get(scope_id)


class ObservationOut(Schema):
    id: str
    scope_id: str
    scope_type: Literal["individual", "group", "collective", "shard"] | None = Field(
        None,
        description="The scope's kind (`shard`: a named collective shard). Filled by the "
        "scope's observation list, adds (single and batch) and search hits; null on "
        "answers about one observation by id (get, edit, feedback), which would need one "
        "more read.",
    )
    scope_name: str | None = Field(
        None,
        description="What a person calls the scope: the user's or group's display name "
        "(else its id), the shard's name, or `collective`. Filled where `scope_type` is.",
    )

    @staticmethod
    def resolve_scope_type(obj: Any, context: Any) -> str | None:
        if isinstance(obj, dict) and obj.get("scope_type"):
            return str(obj["scope_type"])
        scope = _scope_of(obj, context)
        return scope.kind if scope is not None else None

    @staticmethod
    def resolve_scope_name(obj: Any, context: Any) -> str | None:
        if isinstance(obj, dict) and obj.get("scope_name"):
            return str(obj["scope_name"])
        scope = _scope_of(obj, context)
        return scope.label if scope is not None else None

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
        description="What the deterministic detectors found, in this order (docs/kinds.md): "
        + flags_described()
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
    origin: ObservationOrigin = Field(
        "api",
        description="How it got here: formed from a conversation (extraction), added "
        "through the API (a key, the client, MCP), added by a person in the UI (operator), "
        "imported, copied by propagation, moved from another scope, migrated, an edit "
        "held for review, or restored by a bulk undo. Inferred for observations stored "
        "before the field existed.",
    )
    added_by: str | None = Field(
        None,
        description="Who added it: `api:<key name>`, `ui:<username>`, `model:<job or scope "
        "id>` for extraction and propagation; null when not recorded.",
    )

    @staticmethod
    def resolve_origin(obj: Any) -> str:
        if isinstance(obj, Observation):
            return observation_origin(obj)
        return (obj.get("origin") if isinstance(obj, dict) else obj.origin) or "api"

    superseded_by: str | None = Field(
        None,
        description="The newer observation that replaced this one (a confirmed contradiction); "
        "null while it is current. A superseded observation is in no context or search.",
    )
    valid_until: Time | None = Field(
        None, description="When it stopped being true (the newer one's time); null: current."
    )
    superseded: bool = Field(False, description="Replaced by a newer observation.")


class SupersedeIn(InSchema):
    by: str = Field(
        ..., pattern=r"^[0-9a-f]{24}$", description="The newer observation that replaces it."
    )


class SupersessionChainOut(Schema):
    items: list[ObservationOut] = Field(
        ..., description="Oldest first; each one superseded by the next (at most 50 each way)."
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
    reason: Annotated[str, StringConstraints(max_length=500)] | None = Field(
        None, description="Why (kept with the correction this change records)."
    )
    expires_at: IsoTime | None = Field(
        None,
        description="Set the expiry (a past time expires it at once) or clear it with null; "
        "409 once the expiry sweep has handled the observation.",
    )
