"""Conversation ingest: messages, groups, what was refused, the jobs it queued."""

from __future__ import annotations

from typing import Literal

from ninja import Field, Schema

from memory_admin.api.v1.schemas.common import (
    MAX_GROUPS,
    MAX_MESSAGES,
    DisplayName,
    ExternalId,
    InSchema,
    IsoTime,
)


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


class ForgetRequestOut(Schema):
    status: Literal["proposed", "applied", "nothing_found"]
    observation_ids: list[str]
    review_id: str | None


class IngestOut(Schema):
    session_id: str
    accepted: int
    duplicates: int
    unformed_messages: int
    formation_job_id: str | None
    refused: list[RefusedOut] = Field(default_factory=list)
    forget_request: ForgetRequestOut | None = Field(
        None,
        description='The user asked to forget ("forget what I said about X"): `proposed` '
        "(waits for review, `review_id`), `applied` (deleted) or `nothing_found`, with the "
        "observations named (MEMORY_FORGET_REQUESTS: review | apply).",
    )


class JobIdOut(Schema):
    job_id: str
