"""Ranked text search over observations (BM25 on our own index), scoped by privacy.

The index is built on write (`search_index_add` inside the transaction that stores
observations, `search_index_remove` on soft delete and before a content change,
`search_index_forget` before a hard delete), so a search costs two store round
trips whatever the size of the logs: the statistics and postings of every
(scope, term) by `_id`, then the winning observations by `_id`. The ranking is
BM25 over the union of the searched scopes, identical on any MongoDB server:
no `$text`, no Atlas Search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bson import ObjectId

from streams.documents import Observation, Scope
from streams.embeddings import RERANK_POOL, SemanticRanker, semantic_rerank
from streams.exceptions import NotFound
from streams.ids import require_object_id
from streams.search_text import query_terms, term_counts
from streams.store import MemoryStore, StoreSession
from streams.store.search import IndexChange

BM25_K1 = 1.2
BM25_B = 0.75
MAX_LIMIT = 50


@dataclass(frozen=True)
class SearchHit:
    observation: Observation
    score: float
    matched_terms: list[str]


# -- the index, on write -----------------------------------------------------------------


def _changes(observations: list[Observation], sign: int) -> list[IndexChange]:
    return [
        IndexChange(
            scope_id=ObjectId(o.scope_id),
            observation_id=ObjectId(o.id),
            counts=dict(term_counts(o.content)),
            sign=sign,
        )
        for o in observations
    ]


def search_index_add(
    *, store: MemoryStore, observations: list[Observation], session: StoreSession | None = None
) -> None:
    """Index new observations (call inside the transaction that inserts them)."""
    live = [o for o in observations if not o.deleted]
    if live:
        store.search_index.apply(_changes(live, +1), session=session)


def search_index_remove(
    *, store: MemoryStore, observations: list[Observation], session: StoreSession | None = None
) -> None:
    """Take observations out of search (soft delete, or before re-indexing new content).

    Observations already deleted were taken out when they were deleted: skipped, so
    the statistics are never decremented twice.
    """
    live = [o for o in observations if not o.deleted]
    if live:
        store.search_index.apply(_changes(live, -1), session=session)


def search_index_forget(*, store: MemoryStore, observations: list[Observation]) -> None:
    """Before a hard delete: drop the observations' postings and adjust their scopes'
    statistics, so nothing of them stays searchable or skews the ranking."""
    search_index_remove(store=store, observations=observations)


def search_index_build(*, store: MemoryStore, observations: list[Observation]) -> int:
    """Index observations of scopes that have no index yet, in bulk (seeding only: it
    writes the documents whole instead of updating them)."""
    return store.search_index.insert_fresh(_changes([o for o in observations if not o.deleted], +1))


def search_index_drop_scope(*, store: MemoryStore, scope_id: str) -> None:
    """A scope removed whole (forget user): its index goes with it."""
    store.search_index.drop_scope(require_object_id(scope_id, what="scope"))


# -- which scopes a search may see -------------------------------------------------------


def search_scopes(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str | None = None,
    group_ids: list[str] | None = None,
    scope_id: str | None = None,
) -> list[Scope]:
    """The scopes a caller may search: the user's individual scope (only with `user_id`),
    the named groups, the agent's collective scope and active shards; or one scope.

    An individual scope asked for by id is visible only with its own `user_id`
    (otherwise not found, like a scope of another agent).
    """
    if scope_id is not None:
        scope = store.scopes.get(require_object_id(scope_id, what="scope"))
        if scope is None or scope.agent_id != agent_id:
            raise NotFound("scope not found")
        if scope.scope_type == "individual" and scope.user_id != user_id:
            raise NotFound("scope not found")
        return [scope]
    scopes = store.visible_scopes.find(
        agent_id=agent_id, user_id=user_id, group_ids=list(group_ids or [])
    )
    return [s for s in scopes if s.is_active]  # a paused scope (any type) is not searched


# -- ranking -----------------------------------------------------------------------------


def search_observations(
    *,
    store: MemoryStore,
    agent_id: str,
    query: str,
    user_id: str | None = None,
    group_ids: list[str] | None = None,
    scope_id: str | None = None,
    limit: int = 10,
    semantic: SemanticRanker | None = None,
) -> list[SearchHit]:
    """The best `limit` observations for `query` in the scopes the caller may see.

    With `semantic` (an embedding model is configured) the text candidates are reordered
    by reciprocal rank fusion with their embedding similarity, and `score` is the fused one.
    """
    scopes = search_scopes(
        store=store, agent_id=agent_id, user_id=user_id, group_ids=group_ids, scope_id=scope_id
    )
    return search_in_scopes(store=store, scopes=scopes, query=query, limit=limit, semantic=semantic)


def search_in_scopes(
    *,
    store: MemoryStore,
    scopes: list[Scope],
    query: str,
    limit: int = 10,
    exclude_ids: frozenset[str] = frozenset(),
    semantic: SemanticRanker | None = None,
) -> list[SearchHit]:
    """BM25 over the union of `scopes`, from the index alone; deleted observations never
    appear (they leave the index when deleted, and are checked again on fetch)."""
    terms = query_terms(query)
    limit = max(1, min(limit, MAX_LIMIT))
    if not terms or not scopes:
        return []
    scope_oids = [ObjectId(s.id) for s in scopes]
    totals, stats = store.search_index.read(scope_oids, terms)
    documents = sum(t.documents for t in totals)
    if documents <= 0:
        return []
    average_length = max(1.0, sum(t.length for t in totals) / documents)
    frequency: dict[str, int] = {}
    for stat in stats:
        frequency[stat.term] = frequency.get(stat.term, 0) + max(0, stat.document_frequency)
    scores: dict[ObjectId, float] = {}
    matched: dict[ObjectId, list[str]] = {}
    for stat in stats:
        df = frequency[stat.term]
        idf = math.log(1 + (documents - df + 0.5) / (df + 0.5))
        for posting in stat.postings:
            norm = BM25_K1 * (1 - BM25_B + BM25_B * posting.length / average_length)
            gain = idf * posting.frequency * (BM25_K1 + 1) / (posting.frequency + norm)
            scores[posting.observation_id] = scores.get(posting.observation_id, 0.0) + gain
            matched.setdefault(posting.observation_id, []).append(stat.term)
    # Best first; among equals, the newer observation (a larger ObjectId) first.
    ranked = sorted(scores, key=lambda oid: (scores[oid], oid), reverse=True)
    ranked = [oid for oid in ranked if str(oid) not in exclude_ids]
    visible = {s.id for s in scopes}
    order = {t: i for i, t in enumerate(terms)}
    scored: list[tuple[Observation, float]] | None = None
    if semantic is not None:
        scored = semantic_rerank(
            store=store, ranker=semantic, query=query, candidates=ranked[:RERANK_POOL]
        )
    if scored is None:
        wanted = ranked[: limit + 5]  # a little slack for anything deleted since it was indexed
        scored = [(o, scores[ObjectId(o.id)]) for o in store.observations.get_many(wanted)]
    hits: list[SearchHit] = []
    for observation, score in scored:
        if observation.deleted or observation.scope_id not in visible:
            continue
        terms_matched = set(matched[ObjectId(observation.id)])
        hits.append(
            SearchHit(
                observation=observation,
                score=round(score, 6),
                matched_terms=sorted(terms_matched, key=lambda t: order.get(t, 0)),
            )
        )
        if len(hits) == limit:
            break
    return hits
