"""Ranked text search over an agent's observations, scoped by privacy."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema
from pydantic import StringConstraints

from memory_admin.api.auth import require_agent
from memory_admin.api.v1.schemas import ExternalId, ObservationOut, error_responses
from memory_admin.embeddings import semantic_ranker
from memory_admin.stores import get_store
from streams.search import MAX_LIMIT, search_observations

SearchText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]


class SearchQuery(Schema):
    q: SearchText
    user_id: ExternalId | None = Field(
        None, description="The user whose individual memory is searched too (only theirs)."
    )
    group_id: ExternalId | None = Field(None, description="A group whose memory is searched too.")
    scope_id: str | None = Field(None, max_length=64, description="Search this one scope only.")
    limit: int = Field(10, ge=1, le=MAX_LIMIT)


class SearchHitOut(Schema):
    observation: ObservationOut
    score: float
    matched_terms: list[str]


class SearchOut(Schema):
    items: list[SearchHitOut]


router = Router(tags=["search"])


@router.get(
    "/agents/{agent_id}/search",
    response={200: SearchOut, **error_responses(401, 404, 422, 503)},
)
def search(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[SearchQuery]
) -> dict[str, Any]:
    """Best matches first (BM25 with stemming and stop words), with their scores and the
    query terms each matched. Without `user_id` no individual memory is searched; an
    individual scope's `scope_id` needs its own `user_id`. Deleted observations never appear.
    """
    require_agent(request, agent_id)
    hits = search_observations(
        store=get_store(),
        agent_id=agent_id,
        query=filters.q,
        user_id=filters.user_id,
        group_ids=[filters.group_id] if filters.group_id else None,
        scope_id=filters.scope_id,
        limit=filters.limit,
        semantic=semantic_ranker(),
    )
    return {"items": hits}
