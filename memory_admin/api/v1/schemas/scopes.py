"""Scopes: lists, creation, settings, pins."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import StrictBool, StrictInt, StringConstraints

from memory_admin.api.errors import register_union_tags
from memory_admin.api.v1.schemas.common import (
    MAX_VERSION,
    NOT_BLANK,
    DisplayName,
    ExternalId,
    InSchema,
    PageQuery,
    Prompt,
    Time,
)
from memory_admin.api.v1.schemas.limits import (
    ITEM_CAP_HELP,
    ITEM_WORDS_HELP,
    MODEL_HELP,
    ItemCap,
    ItemWords,
    ModelName,
)
from streams.core.documents import ScopeType


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
    # Limits and models (docs/limits-and-models.md): null takes the agent's default for the
    # scope type, else the code's.
    item_words: int | None = Field(None, description=ITEM_WORDS_HELP)
    item_cap: int | None = Field(None, description=ITEM_CAP_HELP)
    consolidation_model: str | None = Field(None, description=MODEL_HELP)
    propagation_model: str | None = Field(None, description=MODEL_HELP)
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
    # Limits and models (docs/limits-and-models.md); null: the agent's default, else the code's.
    item_words: ItemWords | None = Field(None, description=ITEM_WORDS_HELP)
    item_cap: ItemCap | None = Field(None, description=ITEM_CAP_HELP)
    consolidation_model: ModelName | None = Field(None, description=MODEL_HELP)
    propagation_model: ModelName | None = Field(
        None, description=f"{MODEL_HELP} The collective memory does not propagate."
    )
    save_anyway: StrictBool = Field(
        False,
        description="Save a consolidation or propagation prompt even when it fails prompt "
        "checks of its kind that the prompt in effect passes (else 422 naming the field).",
    )
    consolidation: Annotated[str, StringConstraints(max_length=20_000, pattern=NOT_BLANK)] = Field(
        None,  # type: ignore[assignment]  # may be left out, never null
        description="A hand edit of the consolidation text; needs `expected_version`.",
    )
    expected_version: Annotated[StrictInt, Field(ge=0, le=MAX_VERSION)] = Field(
        None,  # type: ignore[assignment]  # may be left out, never null
        description="The `consolidation_version` the edit started from (409 if it moved on).",
    )
