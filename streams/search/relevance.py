"""Search scores normalised to 0..1 (`relevance`), and `min_score` as such a threshold.

A hit's raw score is BM25 plus the stages' shares: unbounded, and its scale moves with
the scope (a rare word weighs more in a large scope). Seed 001 §3 thresholds a sigmoid of
the raw score at 0.35; a plain sigmoid of a BM25 score is above 0.5 for every match, so
the curve is centred on `RELEVANCE_CENTER`, the raw score of one matched term of middling
weight (a term in about one observation in eight of a scope: its IDF is about 2):

    relevance = 1 / (1 + exp(-(score - RELEVANCE_CENTER) / RELEVANCE_SCALE))

so 0.35 keeps hits scoring at least 2 - ln(0.65 / 0.35) = 1.38, 0.5 those of at least 2,
and 0 keeps every hit. The mapping is monotonic: a threshold on relevance is the same
cut as one on the raw score (`score_at_relevance`), so ranking never depends on it.
"""

from __future__ import annotations

import math

RELEVANCE_CENTER = 2.0
RELEVANCE_SCALE = 1.0
SEED_THRESHOLD = 0.35  # seed 001 §3's threshold, on this scale


def relevance(score: float) -> float:
    """The raw score on 0..1 (rounded to four places, as the API shows it)."""
    x = (score - RELEVANCE_CENTER) / RELEVANCE_SCALE
    if x < -700:  # exp overflows beyond; far below any threshold anyway
        return 0.0
    return round(1.0 / (1.0 + math.exp(-x)), 4)


def score_at_relevance(threshold: float) -> float | None:
    """The raw score a hit needs for `threshold` (0..1); None: no cut (0 keeps all)."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"a relevance threshold is 0..1, not {threshold!r}")
    if threshold == 0.0:
        return None
    if threshold == 1.0:
        return math.inf
    return RELEVANCE_CENTER + RELEVANCE_SCALE * math.log(threshold / (1.0 - threshold))
