"""The hot path: an agent asks for the memory context of the message it is answering."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema
from pydantic import StringConstraints

from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import (
    MAX_GROUPS,
    DisplayName,
    ExternalId,
    GroupIn,
    InSchema,
    ObservationOut,
    error_responses,
)
from memory_admin.embeddings import semantic_ranker
from memory_admin.stores import get_store
from streams.context import context_assemble

MAX_MESSAGE_CHARS = 20_000

Message = Annotated[str, StringConstraints(max_length=MAX_MESSAGE_CHARS)]


class ContextIn(InSchema):
    user_id: ExternalId
    user_name: DisplayName | None = None
    groups: list[GroupIn] = Field(default_factory=list, max_length=MAX_GROUPS)
    session_id: ExternalId | None = None
    message: Message = Field(..., description="The message the agent is answering.")


class RetrievedOut(Schema):
    observation: ObservationOut
    score: float
    matched_terms: list[str]


class RetrievalOut(Schema):
    triggered: bool
    reason: str
    results: list[RetrievedOut]


class ContextOut(Schema):
    context: str
    retrieval: RetrievalOut


router = Router(tags=["context"])


@router.post(
    "/agents/{agent_id}/context",
    auth=needs("read"),
    response={200: ContextOut, **error_responses(400, 401, 404, 422, 503)},
)
def get_context(
    request: HttpRequest, agent_id: Path[ExternalId], payload: ContextIn
) -> dict[str, Any]:
    """The memory context as XML, and whether retrieval ran, why, and what it found.

    No LLM call; reflects every committed change at once (no time-based cache).
    """
    require_agent(request, agent_id)
    result = context_assemble(
        store=get_store(),
        agent_id=agent_id,
        user_id=payload.user_id,
        user_name=payload.user_name,
        groups=[(g.id, g.name) for g in payload.groups],
        message=payload.message,
        session_id=payload.session_id,
        semantic=semantic_ranker(),
    )
    return {
        "context": result.xml,
        "retrieval": {
            "triggered": result.decision.triggered,
            "reason": result.decision.reason,
            "results": result.hits,
        },
    }
