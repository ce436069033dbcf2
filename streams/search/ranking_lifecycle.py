"""Ranking stages of the memory lifecycle, each a switch of `streams.search.ranking.Ranking`
and each bounded, so no stage can bury a relevant fact or lift an irrelevant one:

- `importance` (switches `feedback` and `access`): how often the observation was
  retrieved (`access_count`) and what the agent said of it (`useful_count`,
  `useless_count`), as a prior on the score: at most `IMPORTANCE_BOUND` of it either
  way. Feedback counts as votes shrunk towards neutral by `PRIOR_VOTES` pseudo-votes:
  one voice moves a fact by a fifth of its share.
- `recency`: `exp(-age / 30 days)`, the age counted from the newest candidate (the
  freshest competing fact gains most), adding at most `RECENCY_WEIGHT` of the score.
- `mmr`: maximal marginal relevance among the final top k: each next hit is the one
  whose relevance, less its word overlap with the hits above it, is highest
  (`MMR_LAMBDA` of relevance).

Each adds a mechanism to the candidate's evidence (`importance`, `recency`) so the
search inspector shows what it did; MMR only reorders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TypeVar

from bson import ObjectId

from streams.core.documents import Observation
from streams.search.dedup import token_set
from streams.search.ranking import Candidate

IMPORTANCE_BOUND = 0.2  # of a hit's score, either way
FEEDBACK_SHARE = 0.2  # the most feedback alone moves a score (below the bound)
ACCESS_SHARE = 0.05  # the most access counts alone lift a score
ACCESS_SATURATION = 50  # retrievals after which more count no more
PRIOR_VOTES = 4  # pseudo-votes that shrink feedback towards neutral
RECENCY_WEIGHT = 0.1
RECENCY_SCALE = timedelta(days=30)
MMR_LAMBDA = 0.8

T = TypeVar("T")


def feedback_prior(useful: int, useless: int) -> float:
    """In (-FEEDBACK_SHARE, FEEDBACK_SHARE): the votes' balance, shrunk by `PRIOR_VOTES`."""
    useful, useless = max(useful, 0), max(useless, 0)
    return FEEDBACK_SHARE * (useful - useless) / (useful + useless + PRIOR_VOTES)


def importance_prior(
    observation: Observation, *, feedback: bool = True, access: bool = True
) -> float:
    """The share of its score an observation gains (or loses), within the bound."""
    prior = 0.0
    if access:
        prior += ACCESS_SHARE * min(
            1.0, math.log1p(max(observation.access_count, 0)) / math.log1p(ACCESS_SATURATION)
        )
    if feedback:
        prior += feedback_prior(observation.useful_count, observation.useless_count)
    return max(-IMPORTANCE_BOUND, min(IMPORTANCE_BOUND, prior))


def importance_stage(
    *,
    candidates: dict[ObjectId, Candidate],
    feedback: bool = True,
    access: bool = True,
    feedback_by_scope: Mapping[str, bool] | None = None,
) -> None:
    """`feedback_by_scope`: a scope's own feedback switch, over `feedback`, for its hits."""
    for candidate in candidates.values():
        if candidate.observation is None:
            continue
        scoped = (feedback_by_scope or {}).get(candidate.observation.scope_id, feedback)
        if not (scoped or access):
            continue
        prior = importance_prior(candidate.observation, feedback=scoped, access=access)
        if prior:
            candidate.mechanisms["importance"] = candidate.score * prior


def recency_stage(
    *, candidates: dict[ObjectId, Candidate], only_scopes: frozenset[str] | None = None
) -> None:
    """Age counted from the newest fetched candidate; with `only_scopes`, only their hits
    gain (the newest is still the newest of all, so a scope's lift means the same)."""
    fetched = [c for c in candidates.values() if c.observation is not None]
    if len(fetched) < 2:
        return
    newest = max(c.observation.observed_at for c in fetched)  # type: ignore[union-attr]
    for candidate in fetched:
        assert candidate.observation is not None
        if only_scopes is not None and candidate.observation.scope_id not in only_scopes:
            continue
        age = (newest - candidate.observation.observed_at) / RECENCY_SCALE
        candidate.mechanisms["recency"] = (
            candidate.score * RECENCY_WEIGHT * math.exp(-max(age, 0.0))
        )


def mmr_reorder(ranked: Sequence[tuple[Candidate, T]], *, k: int) -> list[tuple[Candidate, T]]:
    """The top `k` of `ranked` (best first, with their scores) reordered for diversity;
    the rest keep their order after them."""
    head = [r for r in ranked[:k] if r[0].observation is not None]
    rest = [r for r in ranked if r not in head]
    if len(head) < 3:
        return list(ranked)
    top = max(float(score) for _, score in head) or 1.0  # type: ignore[arg-type]
    words = {id(c): token_set(c.observation.content) for c, _ in head}  # type: ignore[union-attr]
    chosen: list[tuple[Candidate, T]] = [head[0]]
    left = head[1:]
    while left:

        def gain(item: tuple[Candidate, T]) -> float:
            mine = words[id(item[0])]
            overlap = max(_jaccard(mine, words[id(c)]) for c, _ in chosen)
            return MMR_LAMBDA * float(item[1]) / top - (1 - MMR_LAMBDA) * overlap  # type: ignore[arg-type]

        best = max(left, key=gain)
        chosen.append(best)
        left.remove(best)
    return chosen + rest


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
