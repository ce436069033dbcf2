"""The review queue and its decisions."""

from __future__ import annotations

from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import StringConstraints

from memory_admin.api.v1.schemas.common import InSchema, PageQuery, Time
from memory_admin.api.v1.schemas.observations import ObservationContent, ObservationOut


class ReviewQueueQuery(PageQuery):
    scope_id: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    reason: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    status: Literal["in_review", "candidate"] = "in_review"


ReviewNote = Annotated[str, StringConstraints(max_length=2000)]


class ReviewDecisionIn(InSchema):
    decision: Literal["approve", "reject", "supersede"] = Field(
        ...,
        description="`supersede`: approve a waiting contradiction (`contradicts:<id>`) and "
        "mark the older observation it contradicts superseded by it.",
    )
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


class DecidedOut(Schema):
    observation: ObservationOut
    undo_until: Time | None = Field(
        description="Until when `POST /observations/{id}/review/undo` takes the decision "
        "back (MEMORY_REVIEW_UNDO_SECONDS after it); null when it cannot be undone (the "
        "window ended, consolidated since, approved with an edited text)."
    )


class DecidedPageOut(Schema):
    items: list[DecidedOut] = Field(..., description="Newest decision first.")
    next_cursor: str | None
