"""Query understanding (issue 28), pure functions the search runs around its stages:

- dates: "yesterday", "last week", "in May", "two weeks ago" resolved to a time window
  against the time of asking; hits observed in it gain a share of their score (a boost,
  not a filter: a text can say "in May" of something it was told later);
- multi-hop decomposition: "what did Melanie do after the race?" is also asked as its
  parts ("race Melanie"), each part's list interleaved with the whole query's, so the
  event a part names is found even when the whole query's terms point elsewhere;
- pseudo-relevance feedback (RM3: Lavrenko and Croft's relevance model, interpolated
  with the query as Anserini does): the terms that weigh most in the best hits of a
  first pass, added to the query at a fraction of a query term's weight.

Each is a switch of `streams.search.ranking.Ranking`, measured with leave-one-out in
`benchmarks.retrieval_quality`.
"""

from __future__ import annotations

import heapq
import re
from calendar import monthrange
from datetime import datetime, timedelta
from operator import itemgetter

from streams.search.text import STOP_WORDS, term_counts

# -- dates -------------------------------------------------------------------------------

_MONTHS_TEXT = """january february march april may june
    july august september october november december"""
MONTH_NAMES = _MONTHS_TEXT.split()
_MONTH = "|".join(MONTH_NAMES)
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
# Longest phrases first: "last weekend" before "last week".
WHEN_PHRASES = re.compile(
    r"\b(?:"
    r"(?P<ago>(?P<n>\d{1,3}|an?|one|two|three|four|five|six) (?P<unit>day|week|month|year)s? ago)"
    r"|(?P<relative>(?:last|this|past) (?:weekend|week|month|year))"
    r"|(?P<day>yesterday|today|tonight|this morning)"
    rf"|(?:in|during|since|last|this) (?P<month>{_MONTH})(?:,? (?P<month_year>(?:19|20)\d\d))?"
    r"|in (?P<year>(?:19|20)\d\d)"
    r")\b",
    re.IGNORECASE,
)


def resolve_when(text: str, *, now: datetime) -> tuple[datetime, datetime, str] | None:
    """The time window `[start, end)` the query's first date phrase names, counted from
    `now`, with the phrase; None without one. "in May" is the latest May that has begun
    by `now`; "last week" the Monday-to-Monday week before this one."""
    match = WHEN_PHRASES.search(text)
    if match is None:
        return None
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    phrase = match.group(0)
    if match["ago"]:
        n = match["n"].lower()
        count = int(n) if n.isdigit() else _NUMBER_WORDS[n]
        span = timedelta(days=_UNIT_DAYS[match["unit"].lower()])
        centre = day - count * span
        return centre - span / 2, centre + span / 2 + timedelta(days=1), phrase
    if match["day"]:
        start = day - timedelta(days=1) if match["day"].lower() == "yesterday" else day
        return start, start + timedelta(days=1), phrase
    if match["relative"]:
        which, unit = match["relative"].lower().split()
        return (*_relative(day, which, unit), phrase)
    if match["month"]:
        month = MONTH_NAMES.index(match["month"].lower()) + 1
        year = int(match["month_year"]) if match["month_year"] else None
        if year is None:
            year = now.year if (now.month, now.day) >= (month, 1) else now.year - 1
        start = day.replace(year=year, month=month, day=1)
        return start, start + timedelta(days=monthrange(year, month)[1]), phrase
    start = day.replace(year=int(match["year"]), month=1, day=1)
    return start, start.replace(year=start.year + 1), phrase


def _relative(day: datetime, which: str, unit: str) -> tuple[datetime, datetime]:
    monday = day - timedelta(days=day.weekday())
    if unit == "week":
        if which == "this":
            return monday, monday + timedelta(days=7)
        if which == "past":
            return day - timedelta(days=7), day + timedelta(days=1)
        return monday - timedelta(days=7), monday
    if unit == "weekend":
        saturday = monday - timedelta(days=2) if which != "this" else monday + timedelta(days=5)
        return saturday, saturday + timedelta(days=2)
    if unit == "month":
        first = day.replace(day=1)
        if which == "this":
            return first, first + timedelta(days=monthrange(first.year, first.month)[1])
        if which == "past":
            return day - timedelta(days=30), day + timedelta(days=1)
        previous = (first - timedelta(days=1)).replace(day=1)
        return previous, first
    first = day.replace(month=1, day=1)
    if which == "this":
        return first, first.replace(year=first.year + 1)
    if which == "past":
        return day - timedelta(days=365), day + timedelta(days=1)
    return first.replace(year=first.year - 1), first


def without_phrase(text: str, phrase: str) -> str:
    """The query without its date phrase: the time is matched by the observation times,
    not by a text that happens to say "may" or "week"."""
    return text.replace(phrase, " ", 1)


# -- multi-hop decomposition -------------------------------------------------------------

# Where a question joins two things it asks about.
JOINS = re.compile(
    r"(?:,\s*|\s+)(?:and then|and also|after|before|while|since|and|but|then)\s+", re.IGNORECASE
)

# "Caroline and Melanie": two people asked about together, not two things.
_PAIRS = re.compile(r"\b([A-Z][\w'’]*) and (?=[A-Z][a-z])")


def decompose(text: str, *, names: frozenset[str], ignore: frozenset[str]) -> list[str]:
    """The parts of a question that joins two or more things ("what did X do after Y?",
    "what does Melanie paint and where does she run?"), each asked on its own: only parts
    that say something beyond the people asked about (`names`, stems) and the words
    search leaves out anyway (`ignore`); the query's people are added to each part that
    names none of them. No parts (`[]`) for a question about one thing."""
    pieces = [
        p.strip(" ?!.,").replace(" & ", " and ") for p in JOINS.split(_PAIRS.sub(r"\1 & ", text))
    ]
    if len(pieces) < 2:
        return []
    people = [w for w in re.findall(r"[^\W\d_][\w]*", text) if term_counts(w).keys() & names]
    parts: list[str] = []
    for piece in pieces:
        terms = set(term_counts(piece))
        if not terms - names - ignore:
            continue
        if not terms & names and people:
            piece = f"{piece} {' '.join(dict.fromkeys(people))}"
        parts.append(piece)
    whole = set(term_counts(text))
    if len(parts) < 2 and all(set(term_counts(p)) == whole for p in parts):
        return []
    return parts


def interleave(lists: list[list[str]]) -> list[str]:
    """The lists taken in turns, first the whole query's, each id once: every part's best
    hit comes within the first `len(lists)`. (Reciprocal rank fusion would let a part
    that repeats the whole query's terms count twice and bury the other parts.)"""
    out: list[str] = []
    seen: set[str] = set()
    for rank in range(max((len(ranked) for ranked in lists), default=0)):
        for ranked in lists:
            if rank < len(ranked) and ranked[rank] not in seen:
                seen.add(ranked[rank])
                out.append(ranked[rank])
    return out


# -- pseudo-relevance feedback (RM3) -----------------------------------------------------


def expansion_terms(
    texts: list[tuple[str, float]], *, query: list[str], count: int, weight: float
) -> dict[str, float]:
    """RM3's expansion: each term's probability in the relevance model of the top hits
    (`texts`, with their scores: P(w|R) = sum over hits of P(w|d) times the hit's share of
    the scores), its `count` best terms not in the `query`, each weighing `weight` times
    its probability over the best one's (the best expansion term weighs `weight` of a
    query term)."""
    total = sum(max(score, 0.0) for _, score in texts)
    if total <= 0 or count <= 0:
        return {}
    model: dict[str, float] = {}
    for text, score in texts:
        counts = term_counts(text)
        length = sum(counts.values())
        if not length or score <= 0:
            continue
        for term, n in counts.items():
            if term in query or term in STOP_WORDS or term.isdigit():
                continue
            model[term] = model.get(term, 0.0) + (score / total) * n / length
    best = heapq.nlargest(count, model.items(), key=itemgetter(1))  # as Counter.most_common
    if not best:
        return {}
    top = best[0][1]
    return {term: weight * p / top for term, p in best}
