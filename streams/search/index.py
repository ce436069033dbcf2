"""Ranked text search over observations (our own index), scoped by privacy.

The index is built on write (`search_index_add` inside the transaction that stores
observations, `search_index_remove` on soft delete and before a content change,
`search_index_forget` before a hard delete), so a search costs three store round
trips whatever the size of the logs: the statistics and postings of every
(scope, term), in one query (`streams.store.search`: rare terms in full, common ones
cut by score bound and completed from the fetched candidates' text); the best
candidates by `_id` (narrowed by the time window);
their session neighbours on `(scope_id, seq)`. Results then count as an access (one
unacknowledged write). The ranking (`streams.search.ranking`) is BM25 over the union of the
searched scopes, then people, term proximity (in the fetched candidates' text),
neighbours and their support, and dates, identical on any MongoDB server:
no `$text`, no Atlas Search.

Long because: the index's writes and search_in_scopes read one posting layout together (the
repository in streams/store/search.py keeps the documents).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import NotFound
from streams.core.ids import require_object_id
from streams.core.visibility import memory_removal
from streams.search.embeddings import SemanticRanker, query_vector
from streams.search.ranking import (
    FINAL,
    STAGES,
    Candidate,
    Query,
    Ranking,
    ScopeLifecycle,
    TermWeights,
    best_by_bound,
    complete_terms,
    cut_terms,
    ordered,
    people_stage,
    query_parse,
    rank_among,
    rank_stage,
    term_stage,
    term_weights,
)
from streams.search.ranking_lifecycle import importance_stage, mmr_reorder, recency_stage
from streams.search.ranking_settings import ranking_for_scopes
from streams.search.relevance import score_at_relevance
from streams.search.rerank import (
    date_stage,
    neighbour_seeds,
    neighbour_stage,
    neighbour_steps,
    proximity_stage,
    text_terms,
    when_stage,
)
from streams.search.text import term_counts
from streams.search.understood import understood_search
from streams.search.vectors import fusion_stage, late_fusion, nearest_in_scopes
from streams.store import MemoryStore, StoreSession
from streams.store.search import IndexChange
from streams.store.write_batch import WriteBatch

MAX_LIMIT = 50
WINDOW_POOL = 500  # with a time window: more candidates, most fall outside it


@dataclass(frozen=True)
class Explanation:
    """Why a hit ranks where it does: its score per query term and per mechanism, and its
    rank after each stage (`terms`, `people`, `proximity`, `neighbours`, `dates`; before a
    stage is after the one before it; 0: not a candidate yet, as a neighbour before
    `neighbours`). Mechanisms: `people`, `proximity`, `neighbours` (a share of a
    neighbouring match's score), `support` (a share of what its session neighbours say
    of the query; ranked with `neighbours`), `dates`.
    With the semantic layer the score is the fused one and no longer their sum."""

    terms: dict[str, float]
    mechanisms: dict[str, float]
    ranks: dict[str, int]


@dataclass(frozen=True)
class SearchHit:
    observation: Observation
    score: float
    matched_terms: list[str]
    explanation: Explanation | None = field(default=None, compare=False)
    # The scope it was found in, as the search read it (`search_observations`): callers
    # that show it need no second read.
    scope: Scope | None = field(default=None, compare=False)


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
    *,
    store: MemoryStore,
    observations: list[Observation],
    session: StoreSession | None = None,
    writes: WriteBatch | None = None,
) -> None:
    """Index new observations (call inside the transaction that inserts them); those held
    for review are indexed when they are released (`streams.guard.review`)."""
    live = [o for o in observations if not o.deleted and not o.held]
    if live:
        store.search_index.apply(_changes(live, +1), session=session, writes=writes)


def search_index_remove(
    *, store: MemoryStore, observations: list[Observation], session: StoreSession | None = None
) -> None:
    """Take observations out of search (soft delete, or before re-indexing new content).

    Observations already deleted were taken out when they were deleted, and held ones
    (in review, candidates, rejected) were never in: skipped, so the statistics are never
    decremented twice.
    """
    live = [o for o in observations if not o.deleted and not o.held]
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
    min_score: float | None = None,
    observed_after: datetime | None = None,
    observed_before: datetime | None = None,
    include_superseded: bool = False,
    now: datetime | None = None,
    record_access: bool = True,
    ranking: Ranking | None = None,
) -> list[SearchHit]:
    """The best `limit` observations for `query` in the scopes the caller may see, observed
    in `[observed_after, observed_before)`, of relevance at least `min_score` (0..1,
    `streams.search.relevance`); they count as an access (as in a context), unless
    `record_access` is off (benchmarks). `ranking`: the agent's and scopes' settings
    (`streams.search.ranking_settings`) unless given (benchmarks).

    With `semantic` (an embedding model is configured) the observations nearest to the
    query's embedding join the text candidates, fused (`streams.search.vectors`) before the
    stages after people, and `score` is the fused one plus those stages.
    """
    scopes = search_scopes(
        store=store, agent_id=agent_id, user_id=user_id, group_ids=group_ids, scope_id=scope_id
    )
    if ranking is None:
        ranking = ranking_for_scopes(store=store, agent_id=agent_id, scopes=scopes)
    hits = search_in_scopes(
        store=store,
        scopes=scopes,
        query=query,
        limit=limit,
        semantic=semantic,
        min_score=None if min_score is None else score_at_relevance(min_score),
        observed_after=observed_after,
        observed_before=observed_before,
        include_superseded=include_superseded,
        ranking=ranking,
        now=now,
    )
    if hits and record_access:
        store.observations.record_access(
            [ObjectId(h.observation.id) for h in hits], now=now or utcnow()
        )
    by_id = {s.id: s for s in scopes}
    return [replace(h, scope=by_id.get(h.observation.scope_id)) for h in hits]


def _usable(observation: Observation, include_superseded: bool, as_of: datetime | None) -> bool:
    """Live and not expired; current, or superseded where the caller asks for it."""
    if not observation.live or observation.is_expired():
        return False
    if include_superseded or observation.superseded_by is None:
        return True
    return as_of is not None and observation.current_at(as_of)


def search_in_scopes(
    *,
    store: MemoryStore,
    scopes: list[Scope],
    query: str,
    limit: int = 10,
    exclude_ids: frozenset[str] = frozenset(),
    semantic: SemanticRanker | None = None,
    min_score: float | None = None,
    observed_after: datetime | None = None,
    observed_before: datetime | None = None,
    ranking: Ranking = FINAL,
    now: datetime | None = None,
    expand: dict[str, float] | None = None,
    include_superseded: bool = False,
    as_of: datetime | None = None,
) -> list[SearchHit]:
    """The ranking stages over the union of `scopes`, every hit with its explanation;
    deleted observations never appear (they leave the index when deleted, and are
    checked again on fetch). Superseded ones stay in the index and are left out here
    unless `include_superseded` (or, with `as_of`, they were still true then). `now`: the
    time of asking, that "last week" counts from;
    `expand`: terms added by feedback, each at its share of a term's weight.

    `exclude_ids` (what the caller shows already) rank like the rest and are only left
    out of the hits: taken out before ranking, they would change the pool, the seeds and
    the support of the others, and the caller's ranking would drift from search's."""
    if ranking.multihop or ranking.prf:
        return understood_search(
            search_in_scopes=search_in_scopes,  # it calls back here, with the switches off
            store=store,
            scopes=scopes,
            query=query,
            limit=limit,
            exclude_ids=exclude_ids,
            semantic=semantic,
            min_score=min_score,
            observed_after=observed_after,
            observed_before=observed_before,
            ranking=ranking,
            now=now,
            include_superseded=include_superseded,
            as_of=as_of,
        )
    parsed = query_parse(query, ranking=ranking, now=now or utcnow(), expand=expand)
    limit = max(1, min(limit, MAX_LIMIT))
    if not parsed.terms or not scopes:
        return []
    totals, stats = store.search_index.read([ObjectId(s.id) for s in scopes], parsed.terms)
    weights = term_weights(
        totals=totals, stats=stats, ranking=ranking, names=parsed.names, boosts=parsed.boosts
    )
    candidates = term_stage(stats=stats, weights=weights)
    if ranking.people:
        people_stage(candidates=candidates, query=parsed, boost=ranking.people_boost)
    windowed = observed_after is not None or observed_before is not None
    pool_size = WINDOW_POOL if windowed else max(ranking.pool, limit + 5 + len(exclude_ids))
    cut = cut_terms(stats)
    if cut and weights is not None:
        # Common terms were read only in part: the pool goes by what each candidate could
        # still score, and the fetched ones get their exact score from their text.
        pool = best_by_bound(candidates.values(), cut, weights, pool_size)
    else:
        pool = ordered(candidates.values())[:pool_size]
    nearest: list[tuple[ObjectId, float]] = []
    if semantic is not None:
        nearest = _nearest(
            store=store,
            ranker=semantic,
            query=query,
            scopes=scopes,
            limit=limit + len(exclude_ids),
        )
        pooled = {c.observation_id for c in pool}
        for oid, _ in nearest:
            if oid not in pooled:
                pool.append(candidates.setdefault(oid, Candidate(oid)))
    fetched = store.observations.get_many_observed(
        [c.observation_id for c in pool],
        observed_after=observed_after,
        observed_before=observed_before,
    )
    visible = {s.id for s in scopes}
    shared = {s.id for s in scopes if s.scope_type != "individual"}
    kept: dict[ObjectId, Candidate] = {}
    for observation in fetched:
        if (
            not _usable(observation, include_superseded, as_of)
            or observation.scope_id not in visible
        ):
            continue
        if memory_removal(observation, shared_section=observation.scope_id in shared):
            continue  # the one rule (private ones only in their user's own scope)
        candidate = candidates[ObjectId(observation.id)]
        candidate.observation = observation
        kept[candidate.observation_id] = candidate
    if cut and weights is not None:
        # Their scores are exact only now: ranked among themselves.
        complete_terms(kept, cut, weights)
        if ranking.people:
            people_stage(candidates=kept, query=parsed, boost=ranking.people_boost)
        rank_among(kept.values(), kept.values(), people=ranking.people)
    else:
        rank_among(candidates.values(), kept.values(), people=ranking.people)
    if semantic is not None and nearest:
        _fuse(kept=kept, nearest=nearest, ranker=semantic, parsed=parsed, weights=weights)
    if ranking.proximity:
        proximity_stage(candidates=kept, query=parsed, weights=weights)
    if ranking.neighbours and kept:
        seeds = neighbour_seeds(ordered(kept.values()), ranking)
        neighbours = [
            o
            for o in _neighbours(
                store=store,
                seeds=seeds,
                known=[c.observation for c in kept.values()],
                reach=ranking.reach,
            )
            if _in_window(o, observed_after, observed_before)
            and _usable(o, include_superseded, as_of)
            and memory_removal(o) is None
        ]
        neighbour_stage(
            candidates=kept,
            seeds=seeds,
            neighbours=neighbours,
            query=parsed,
            weights=weights,
            support=ranking.support,
            own_terms=ranking.neighbour_terms,
            reach=ranking.reach,
            share=ranking.share,
        )
    if ranking.dates:
        date_stage(candidates=kept, query=parsed, boost=ranking.date_boost)
    if ranking.when and parsed.window is not None:
        when_stage(candidates=kept, window=parsed.window, share=ranking.when_share)
    lifecycle_stages(candidates=kept, ranking=ranking)
    final = [(c, c.score) for c in ordered(kept.values())]
    if semantic is not None and nearest and semantic.fusion.method == "late":
        final = late_fusion(final, [(o, c) for o, c in nearest if o in kept], semantic.fusion)
    if ranking.mmr and final:
        final = mmr_reorder(final, k=limit)
    order = {t: i for i, t in enumerate(parsed.terms)}
    hits: list[SearchHit] = []
    for candidate, fused in final:
        if candidate.observation is None or candidate.observation.id in exclude_ids:
            continue
        score = round(fused, 6)
        if min_score is not None and score < min_score:
            break
        hits.append(
            SearchHit(
                observation=candidate.observation,
                score=score,
                matched_terms=sorted(candidate.terms, key=lambda t: order.get(t, 0)),
                explanation=_explain(candidate),
            )
        )
        if len(hits) == limit:
            break
    return hits


def lifecycle_stages(*, candidates: dict[ObjectId, Candidate], ranking: Ranking) -> None:
    """The bounded lifecycle stages (`streams.search.ranking_lifecycle`) the ranking switches
    on: search-wide, or per scope where a scope's settings differ (`scope_lifecycle`)."""
    own = {s.scope_id: s for s in ranking.scope_lifecycle}
    feedback = {scope_id: s.feedback for scope_id, s in own.items()}
    if ranking.feedback or ranking.access or any(feedback.values()):
        importance_stage(
            candidates=candidates,
            feedback=ranking.feedback,
            access=ranking.access,
            feedback_by_scope=feedback,
        )
    if ranking.recency or any(s.recency for s in own.values()):
        recency_stage(candidates=candidates, only_scopes=_recency_scopes(candidates, ranking, own))


def _recency_scopes(
    candidates: dict[ObjectId, Candidate], ranking: Ranking, own: dict[str, ScopeLifecycle]
) -> frozenset[str] | None:
    """The scopes whose hits the recency stage lifts (None: every hit's)."""
    if not own:
        return None
    scope_ids = {c.observation.scope_id for c in candidates.values() if c.observation is not None}
    return frozenset(s for s in scope_ids if (own[s].recency if s in own else ranking.recency))


def _neighbours(
    *, store: MemoryStore, seeds: list[Candidate], known: list[Observation | None], reach: int
) -> list[Observation]:
    """The log around the seeds from a session, in one read: of the scope that holds most
    of them (a second scope would cost a second round trip). The `known` (fetched
    already) are not read again: the store's cost is per document, and a session's turns
    are often candidates together."""
    sessions = [c.observation for c in seeds if c.observation and c.observation.source_session_id]
    if not sessions:
        return []
    counts = Counter(o.scope_id for o in sessions)
    scope_id = max(counts, key=lambda s: counts[s])  # ties: the best seed's scope (first seen)
    seqs = {
        o.seq + step for o in sessions if o.scope_id == scope_id for step in neighbour_steps(reach)
    }
    have = {o.seq: o for o in known if o is not None and o.scope_id == scope_id}
    missing = [s for s in seqs if s not in have]
    return store.observations.neighbours(ObjectId(scope_id), missing) + [
        have[s] for s in seqs if s in have
    ]


def _in_window(o: Observation, after: datetime | None, before: datetime | None) -> bool:
    return (after is None or o.observed_at >= after) and (before is None or o.observed_at < before)


def _explain(candidate: Candidate) -> Explanation:
    ranks: dict[str, int] = {}
    for stage in STAGES:  # a stage that did not run leaves the rank as it was
        ranks[stage] = candidate.ranks.get(stage, ranks.get(_previous(stage), 0))
    return Explanation(
        # Strongest first, ties by term: the order postings were read in (pending or
        # folded) must not change what the inspector shows for the same search.
        terms={
            t: round(v, 6)
            for t, v in sorted(candidate.terms.items(), key=lambda tv: (-tv[1], tv[0]))
        },
        mechanisms={m: round(v, 6) for m, v in candidate.mechanisms.items()},
        ranks=ranks,
    )


def _previous(stage: str) -> str:
    index = STAGES.index(stage)
    return STAGES[index - 1] if index else stage


def _nearest(
    *, store: MemoryStore, ranker: SemanticRanker, query: str, scopes: list[Scope], limit: int
) -> list[tuple[ObjectId, float]]:
    """The observations nearest to the query's embedding (none when it cannot be embedded)."""
    vector = query_vector(ranker, query)
    if vector is None:
        return []
    depth = max(ranker.fusion.depth, limit + 5)
    return nearest_in_scopes(
        store=store,
        scope_ids=[ObjectId(s.id) for s in scopes],
        model=ranker.model,
        query=vector,
        k=depth,
    )


def _fuse(
    *,
    kept: dict[ObjectId, Candidate],
    nearest: list[tuple[ObjectId, float]],
    ranker: SemanticRanker,
    parsed: Query,
    weights: TermWeights | None,
) -> None:
    """The fetched candidates' fused score (the `semantic` mechanism), after people. A
    candidate the embeddings brought in gets its term score from its own text first."""
    for candidate in kept.values():
        if not candidate.terms and weights is not None and candidate.observation is not None:
            candidate.terms = text_terms(candidate.observation.content, parsed, weights)
    if ranker.fusion.method == "late":
        return  # fused after every stage (`late_fusion`)
    text = [(c.observation_id, c.score) for c in ordered(kept.values()) if c.terms]
    fusion_stage(
        candidates=kept,
        text=text,
        nearest=[(oid, c) for oid, c in nearest if oid in kept],
        fusion=ranker.fusion,
    )
    rank_stage(kept.values(), "semantic")
