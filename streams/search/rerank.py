"""The stages that rerank the fetched candidates, after term weights and people: term
proximity, session neighbours (and their support) and dates. Each reads the candidates'
texts, so it runs on the `POOL` fetched ones only, and keeps its effect on every hit
(`Candidate.mechanisms`) and the ranks after it, so search can explain itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from bson import ObjectId

from streams.core.documents import Observation
from streams.search.ranking import (
    DATE_BOOST,
    NEIGHBOUR_REACH,
    NEIGHBOUR_SHARE,
    Candidate,
    Query,
    Ranking,
    TermWeights,
    rank_stage,
)
from streams.search.text import MAX_TERM_CHARS, STOP_WORDS, stem, term_counts, tokens

NEIGHBOUR_WINDOW = timedelta(hours=6)  # neighbours further apart in time are another session
# Term proximity (Büttcher, Clarke and Lushman 2006, "BM25TP"): query terms that occur
# close together in a text (an observation says it) over the same terms scattered
# apart (a text that only mentions them). Pairs further apart add nothing.
PROXIMITY_REACH = 5  # words apart, stop words counted

MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
DAYS = "monday tuesday wednesday thursday friday saturday sunday weekend"
TIME_WORDS = (
    "yesterday today tomorrow tonight ago last next later earlier recently soon since week "
    "weeks month months year years day days morning evening night birthday anniversary"
)
TEMPORAL_WORDS = frozenset(f"{MONTHS} {DAYS} {TIME_WORDS}".split())
YEAR_OR_DATE = re.compile(r"\b(?:1[89]\d\d|20\d\d|\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?)\b")


def says_when(content: str) -> bool:
    """Whether a text places something in time: a date, a year, a weekday or month, "ago"..."""
    if YEAR_OR_DATE.search(content):
        return True
    return any(w in TEMPORAL_WORDS for w in tokens(content))


# -- stage 3: term proximity -------------------------------------------------------------


def query_positions(content: str, terms: frozenset[str]) -> list[tuple[int, str]]:
    """Where the query's terms occur in a text: (word position, term), in order; stop words
    keep their position, so "poetry reading" is 1 apart and "made for a church" 3."""
    out: list[tuple[int, str]] = []
    for position, word in enumerate(tokens(content)):
        word = word.strip("_")
        if not word or word in STOP_WORDS or len(word) > MAX_TERM_CHARS:
            continue
        term = stem(word)
        if term in terms:
            out.append((position, term))
    return out


def proximity_score(positions: list[tuple[int, str]], weights: TermWeights, length: int) -> float:
    """BM25TP: each pair of consecutive occurrences of two different query terms, `d` words
    apart, adds the other term's weight over d² to each term's accumulator, which is then
    saturated as a term frequency is (so one close pair counts most, repeats less)."""
    accumulated: dict[str, float] = {}
    for (p, a), (q, b) in zip(positions, positions[1:], strict=False):
        distance = q - p
        if a == b or distance > PROXIMITY_REACH:
            continue
        accumulated[a] = accumulated.get(a, 0.0) + weights.idf.get(b, 0.0) / distance**2
        accumulated[b] = accumulated.get(b, 0.0) + weights.idf.get(a, 0.0) / distance**2
    norm = weights.k1 * (1 - weights.b + weights.b * length / weights.average_length)
    return sum(
        min(1.0, weights.idf.get(t, 0.0)) * acc * (weights.k1 + 1) / (acc + norm)
        for t, acc in accumulated.items()
    )


def proximity_stage(
    *, candidates: dict[ObjectId, Candidate], query: Query, weights: TermWeights | None
) -> None:
    """Query terms close together in a hit add to its score: a sentence keeps the words of
    what it says together, a text that merely holds the same words does not."""
    terms = frozenset(query.terms)
    if weights is not None and len(terms) > 1:
        for candidate in candidates.values():
            if candidate.observation is None or len(candidate.terms) < 2:
                continue
            positions = query_positions(candidate.observation.content, terms)
            bonus = proximity_score(positions, weights, max(1, candidate.length))
            if bonus > 0:
                candidate.mechanisms["proximity"] = bonus
    rank_stage(candidates.values(), "proximity")


# -- stage 4: session neighbours ---------------------------------------------------------


def neighbour_seeds(candidates: list[Candidate], ranking: Ranking) -> list[Candidate]:
    """The best candidates, whose neighbours in their session are worth fetching."""
    return candidates[: ranking.seeds]


def neighbour_steps(reach: int) -> list[int]:
    """Offsets in the log of the turns around an observation, up to `reach` turns away."""
    return [s for d in range(1, reach + 1) for s in (-d, d)]


def are_neighbours(a: Observation, b: Observation, *, reach: int) -> bool:
    """Close in the same scope's log (at most `reach` turns apart), from the same session,
    and close in time (a session id that lives for months is many conversations).
    Observations without a session (added by hand) have no neighbours."""
    if a.scope_id != b.scope_id or not 0 < abs(a.seq - b.seq) <= reach:
        return False
    if not a.source_session_id or a.source_session_id != b.source_session_id:
        return False
    return abs(a.observed_at - b.observed_at) <= NEIGHBOUR_WINDOW


def _around(
    seed: Observation, slots: dict[tuple[str, int], Observation], reach: int
) -> Iterator[tuple[Observation, float]]:
    """The live session neighbours of `seed` among `slots`, each with its weight: 1 for
    the next turn, halved per turn further."""
    for step in neighbour_steps(reach):
        other = slots.get((seed.scope_id, seed.seq + step))
        if other is not None and other.live and are_neighbours(seed, other, reach=reach):
            yield other, 1 / 2 ** (abs(step) - 1)


def neighbour_stage(
    *,
    candidates: dict[ObjectId, Candidate],
    seeds: list[Candidate],
    neighbours: list[Observation],
    query: Query | None = None,
    weights: TermWeights | None = None,
    support: bool = False,
    own_terms: bool = False,
    reach: int = NEIGHBOUR_REACH,
    share: float = NEIGHBOUR_SHARE,
) -> None:
    """A turn next to a strong match in the same session gains a share of its score: an
    answer often sits one turn after the question that names the topic. With `support`,
    the match also gains a share of what its neighbours say of the query (their term
    score, from their text): a session about the topic backs its turns up, a lone text
    that happens to hold the words has nothing around it. With `own_terms`, a neighbour
    that enters the candidates gets its own term score from its text, as if every
    posting had been read (in a large scope its common terms were cut from the read,
    and the answer turn found as a neighbour lost what it says itself). Neighbours are
    up to `reach` turns away and gain `share` of the seed's score, halved per turn
    further."""
    by_slot = {(o.scope_id, o.seq): o for o in neighbours}
    said: dict[str, dict[str, float]] = {}  # each neighbour's text scored once

    def scored(o: Observation) -> dict[str, float]:
        if o.id not in said:
            assert weights is not None and query is not None
            said[o.id] = text_terms(o.content, query, weights)
        return said[o.id]

    if support and weights is not None and query is not None:
        _support(seeds, by_slot, scored, reach=reach, share=share)
    by_slot = {k: o for k, o in by_slot.items() if ObjectId(o.id) not in candidates}
    for seed in seeds:
        if seed.observation is None:
            continue
        base = seed.score  # its terms, people, proximity and support (seeds gain no share)
        for other, weight in _around(seed.observation, by_slot, reach):
            oid = ObjectId(other.id)
            candidate = candidates.get(oid)
            if candidate is None:
                candidate = candidates[oid] = Candidate(oid, observation=other)
                if own_terms and weights is not None and query is not None:
                    candidate.terms = dict(scored(other))
            elif candidate.observation is None:
                candidate.observation = other
            gain = share * base * weight
            candidate.mechanisms["neighbours"] = max(
                candidate.mechanisms.get("neighbours", 0.0), gain
            )
    rank_stage(candidates.values(), "neighbours")


def text_terms(content: str, query: Query, weights: TermWeights) -> dict[str, float]:
    """A text's score per query term, from the text itself."""
    counts = term_counts(content)
    length = max(1, sum(counts.values()))
    return {
        t: weights.gain(t, counts[t], length)
        for t in query.terms
        if counts.get(t) and t in weights.idf
    }


def _support(
    seeds: list[Candidate],
    by_slot: dict[tuple[str, int], Observation],
    scored: Callable[[Observation], dict[str, float]],
    *,
    reach: int,
    share: float,
) -> None:
    for seed in seeds:
        if seed.observation is None or not seed.terms:
            continue
        best = max(
            (sum(scored(o).values()) * w for o, w in _around(seed.observation, by_slot, reach)),
            default=0.0,
        )
        if best > 0:
            seed.mechanisms["support"] = share * best


# -- stage 5: dates ----------------------------------------------------------------------


def date_stage(
    *, candidates: dict[ObjectId, Candidate], query: Query, boost: float = DATE_BOOST
) -> None:
    """A "when" question: hits that say when something happened come first among equals."""
    if query.asks_when:
        for candidate in candidates.values():
            if candidate.observation is not None and says_when(candidate.observation.content):
                base = candidate.score
                candidate.mechanisms["dates"] = boost * base
    rank_stage(candidates.values(), "dates")


# -- stage 6: the time the query names ---------------------------------------------------


def when_stage(
    *,
    candidates: dict[ObjectId, Candidate],
    window: tuple[datetime, datetime],
    share: float,
) -> None:
    """A query that names a time ("last week", "in May", resolved by
    `streams.search.query_understanding.resolve_when`): hits observed then gain `share` of their
    score. A boost, not a filter: an observation may tell of May later."""
    start, end = window
    for candidate in candidates.values():
        o = candidate.observation
        if o is not None and start <= o.observed_at < end:
            candidate.mechanisms["when"] = share * candidate.score
    rank_stage(candidates.values(), "when")
