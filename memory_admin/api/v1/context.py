"""The hot path: an agent asks for the memory context of the message it is answering."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema
from pydantic import StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import (
    MAX_GROUPS,
    DisplayName,
    ExternalId,
    GroupIn,
    InSchema,
    IsoTime,
    ObservationOut,
    PageQuery,
    error_responses,
)
from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.stores import get_store
from streams.context.assemble import ContextResult, context_assemble
from streams.context.log import context_calls_page
from streams.context.replay import context_replay
from streams.context.retrieval_health import retrieval_health
from streams.core.pagination import Page
from streams.search.memory_requests import memory_request_of

MAX_MESSAGE_CHARS = 20_000
MIN_MAX_TOKENS = 16  # an empty <MemoryContext> takes eight
MAX_MAX_TOKENS = 1_000_000
MAX_HEALTH_DAYS = 90

Message = Annotated[str, StringConstraints(max_length=MAX_MESSAGE_CHARS)]


class ContextIn(InSchema):
    user_id: ExternalId
    user_name: DisplayName | None = None
    groups: list[GroupIn] = Field(default_factory=list, max_length=MAX_GROUPS)
    session_id: ExternalId | None = None
    message: Message = Field(..., description="The message the agent is answering.")
    max_tokens: int | None = Field(
        None,
        ge=MIN_MAX_TOKENS,
        le=MAX_MAX_TOKENS,
        description="The XML fits this many tokens (estimated at four characters each): "
        "retrieved observations are dropped first, then recent ones, then shard sections; "
        "the user's own consolidation loses whole sentences only. `dropped` says what went.",
    )
    as_of: IsoTime | None = Field(
        None,
        description="Replay: the context as it would have been at this time, computed from "
        "history (the consolidation versions then, the observations pending then). Text "
        "deleted, forgotten or made private since stays out. 422 for a future time or one "
        "before the agent existed. A replay is not logged (`context_call_id` is null).",
    )


class RetrievedOut(Schema):
    observation: ObservationOut
    score: float
    matched_terms: list[str]


class RetrievalOut(Schema):
    triggered: bool
    reason: str
    results: list[RetrievedOut]


class MemoryRequestOut(Schema):
    kind: Literal["remember", "forget"]
    topic: str | None = Field(
        ..., description="forget: what to drop, as the user put it; null: the last thing said."
    )


class ContextOut(Schema):
    context: str
    retrieval: RetrievalOut
    memory_request: MemoryRequestOut | None = Field(
        None,
        description="The message asks the memory to remember (it is formed as soon as it is "
        "ingested, at any message count) or to forget something; null: neither. Lets the "
        "agent say what is stored.",
    )
    context_call_id: str | None = Field(
        ..., description="This call's record in the context log; null when the log is off."
    )
    tokens: int = Field(..., description="The XML's size in tokens (estimated).")
    dropped: list[str] = Field(
        ...,
        description="What `max_tokens` left out, in order: `retrieved:<id>`, `recent:<id>`, "
        "`shard:<name>`, `collective`, `group:<id>`, `user:last <n> of <m> sentences`, `user`.",
    )


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
    if payload.as_of is not None:
        result = context_replay(
            store=get_store(),
            agent_id=agent_id,
            user_id=payload.user_id,
            user_name=payload.user_name,
            groups=[(g.id, g.name) for g in payload.groups],
            message=payload.message,
            as_of=payload.as_of,
            max_tokens=payload.max_tokens,
            semantic=semantic_ranker(),
        )
        return _answer(result, payload.message)
    result = context_assemble(
        store=get_store(),
        agent_id=agent_id,
        user_id=payload.user_id,
        user_name=payload.user_name,
        groups=[(g.id, g.name) for g in payload.groups],
        message=payload.message,
        session_id=payload.session_id,
        semantic=semantic_ranker(),
        caller=str(api_actor(request)),
        max_tokens=payload.max_tokens,
    )
    return _answer(result, payload.message)


def _answer(result: ContextResult, message: str | None) -> dict[str, Any]:
    request = memory_request_of(message) if message else None
    return {
        "memory_request": None
        if request is None
        else {"kind": request.kind, "topic": request.topic},
        "context_call_id": result.call_id,
        "tokens": result.tokens,
        "dropped": result.dropped,
        "context": result.xml,
        "retrieval": {
            "triggered": result.decision.triggered,
            "reason": result.decision.reason,
            "results": result.hits,
        },
    }


# -- the context log ---------------------------------------------------------------------


class ContextCallQuery(PageQuery):
    user_id: ExternalId | None = None
    session_id: ExternalId | None = None
    since: IsoTime | None = Field(None, description="Calls at or after this time.")


class SectionTokensOut(Schema):
    name: str
    label: str
    depth: int
    tokens: int


class CallRetrievalOut(Schema):
    triggered: bool
    reason: str


class ContextCallOut(Schema):
    id: str
    agent_id: str
    user_id: str | None
    session_id: str | None
    group_ids: list[str]
    source: str = Field(..., description="`context` or `chat`.")
    caller: str = Field(..., description="Who asked, e.g. `api:<key name>`.")
    created_at: datetime
    message: str
    xml: str
    tokens: int
    sections: list[SectionTokensOut]
    retrieval: CallRetrievalOut
    retrieved_ids: list[str]
    search_ms: float | None
    max_tokens: int | None
    dropped: list[str]


class ContextCallPageOut(Schema):
    items: list[ContextCallOut]
    next_cursor: str | None


@router.get(
    "/agents/{agent_id}/context-calls",
    auth=needs("read"),
    response={200: ContextCallPageOut, **error_responses(401, 404, 422, 503)},
)
def list_context_calls(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[ContextCallQuery]
) -> Page[dict[str, Any]]:
    """What each context call (plain and chat) gave the agent, newest first: the XML, the
    retrieval decision, the retrieved ids and the tokens per section. Kept
    `MEMORY_CONTEXT_LOG_DAYS` days; calls appear about a second after they answered.
    """
    require_agent(request, agent_id)
    return context_calls_page(
        store=get_store(),
        agent_id=agent_id,
        user_id=filters.user_id,
        session_id=filters.session_id,
        since=filters.since,
        cursor=filters.cursor,
        limit=filters.limit,
    )


# -- retrieval health --------------------------------------------------------------------


class HealthQuery(Schema):
    days: int = Field(7, ge=1, le=MAX_HEALTH_DAYS, description="Days back, today included.")


class PhraseOut(Schema):
    phrase: str = Field(..., description="The reason retrieval fired, e.g. `recall phrase: …`.")
    count: int


class ScopeSizeOut(Schema):
    scope_id: str
    scope_type: str
    observations: int


class HealthDayOut(Schema):
    day: date
    calls: int
    fired: int
    fired_no_hit: int
    p95_ms: float | None = Field(..., description="The search's p95 on fired calls, in ms.")
    no_hit_phrases: list[PhraseOut]
    largest_scopes: list[ScopeSizeOut]


class SignalOut(Schema):
    name: str = Field(
        ..., description="`fires_with_nothing_found`, `search_p95_ms`, `observations_per_scope`."
    )
    value: float | None
    threshold: float
    met: bool


class RetrievalHealthOut(Schema):
    agent_id: str
    days: list[HealthDayOut]
    calls: int
    fired: int
    fired_no_hit: int
    p95_ms: float | None
    largest_scopes: list[ScopeSizeOut]
    signals: list[SignalOut]
    vector_search_would_pay: bool = Field(
        ..., description="Any of seed 004 Appendix B's signals holds over the window."
    )
    log_days: int = Field(..., description="MEMORY_CONTEXT_LOG_DAYS: the history available.")


@router.get(
    "/agents/{agent_id}/retrieval-health",
    auth=needs("read"),
    response={200: RetrievalHealthOut, **error_responses(401, 404, 422, 503)},
)
def get_retrieval_health(
    request: HttpRequest, agent_id: Path[ExternalId], query: Query[HealthQuery]
) -> dict[str, Any]:
    """Per day: calls, retrieval fired, fired with no hit, search p95, the reasons that fired
    most often with nothing found, the largest scopes; and whether vector search would
    pay (seed 004 Appendix B). Computed from the context log (`MEMORY_CONTEXT_LOG_DAYS`).
    """
    require_agent(request, agent_id)
    return retrieval_health(store=get_store(), agent_id=agent_id, days=query.days)
