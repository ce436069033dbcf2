"""Ranked text search over an agent's observations, scoped by privacy."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema
from pydantic import StringConstraints

from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import (
    NOT_BLANK,
    ExternalId,
    IsoTime,
    ObservationOut,
    error_responses,
)
from memory_admin.api.v1.schemas.observations import named_scopes
from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.stores import get_store
from streams.core.documents import ScopeType
from streams.core.exceptions import InvalidInput
from streams.search.index import MAX_LIMIT, search_observations
from streams.search.relevance import relevance

SearchText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000, pattern=NOT_BLANK)
]


class SearchQuery(Schema):
    q: SearchText
    user_id: ExternalId | None = Field(
        None, description="The user whose individual memory is searched too (only theirs)."
    )
    group_id: ExternalId | None = Field(None, description="A group whose memory is searched too.")
    scope_id: str | None = Field(None, max_length=64, description="Search this one scope only.")
    limit: int = Field(10, ge=1, le=MAX_LIMIT)
    explain: bool = Field(False, description="Add each hit's score per term and mechanism.")
    min_score: float | None = Field(
        None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Leave out hits of lower relevance (0..1, each hit's `relevance`; the "
        "seeds' threshold is 0.35).",
    )
    observed_after: IsoTime | None = Field(
        None, description="Only observations observed at or after this time (with a zone)."
    )
    observed_before: IsoTime | None = Field(
        None, description="Only observations observed before this time (with a zone)."
    )
    include_superseded: bool = Field(
        False,
        description="Also find superseded observations (replaced by a newer fact); each "
        "hit's observation says so (`superseded`, `superseded_by`, `valid_until`).",
    )


class ExplanationOut(Schema):
    terms: dict[str, float] = Field(..., description="Score of each matched query term.")
    mechanisms: dict[str, float] = Field(
        ..., description="Score added by `people`, `neighbours`, `dates`."
    )
    ranks: dict[str, int] = Field(
        ...,
        description="Rank after each stage: `terms`, `people`, `neighbours`, `dates` "
        "(0: not a candidate yet).",
    )


class ScopeNameOut(Schema):
    """Which scope a hit came from, by name: a shard's `name`, a person's or group's
    `display_name` and ids, so an answer reads without a second call per scope."""

    id: str
    scope_type: ScopeType
    name: str | None
    display_name: str | None
    user_id: str | None
    group_id: str | None


class SearchHitOut(Schema):
    observation: ObservationOut
    scope: ScopeNameOut | None = Field(None, description="The scope the hit came from.")
    score: float = Field(..., description="The raw score (BM25 and the stages' shares).")
    relevance: float = Field(
        ...,
        description="The score on 0..1 (a sigmoid centred on 2.0; `min_score` compares it).",
    )
    matched_terms: list[str]
    explanation: ExplanationOut | None = Field(None, description="Only with `explain=true`.")


class SearchOut(Schema):
    items: list[SearchHitOut]


router = Router(tags=["search"])


@router.get(
    "/agents/{agent_id}/search",
    auth=needs("read"),
    response={200: SearchOut, **error_responses(401, 404, 422, 503)},
)
def search(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[SearchQuery]
) -> dict[str, Any]:
    """Best matches first (term weights, then people, session neighbours and dates), with
    their scores and the query terms each matched; `explain=true` adds why. Without
    `user_id` no individual memory is searched; an individual scope's `scope_id` needs its
    own `user_id`. Deleted observations never appear; superseded ones only when asked
    (`include_superseded`). The hits count as an access.
    """
    require_agent(request, agent_id)
    after, before = filters.observed_after, filters.observed_before
    if after is not None and before is not None and after >= before:
        raise InvalidInput("observed_after must be earlier than observed_before")
    hits = search_observations(
        store=get_store(),
        agent_id=agent_id,
        query=filters.q,
        user_id=filters.user_id,
        group_ids=[filters.group_id] if filters.group_id else None,
        scope_id=filters.scope_id,
        limit=filters.limit,
        semantic=semantic_ranker(),
        min_score=filters.min_score,
        observed_after=after,
        observed_before=before,
        include_superseded=filters.include_superseded,
    )
    scopes = {h.scope.id: h.scope for h in hits if h.scope is not None}
    named_scopes(request, scopes.values())
    items = [
        {
            "observation": h.observation,
            "scope": scopes.get(h.observation.scope_id),
            "score": h.score,
            "relevance": relevance(h.score),
            "matched_terms": h.matched_terms,
            "explanation": h.explanation if filters.explain else None,
        }
        for h in hits
    ]
    return {"items": items}
