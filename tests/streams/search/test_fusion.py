"""Fusion of the text and embedding candidate lists, on hand-made lists."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.search.vectors import Fusion, ScopeVectors, fused_scores

A, B, C, D = (ObjectId() for _ in range(4))


def test_rrf_scores_each_list_by_rank_in_the_text_scores_units() -> None:
    text = [(A, 4.0), (B, 3.0), (C, 1.0)]
    nearest = [(C, 0.9), (D, 0.8)]
    fused = fused_scores(text, nearest, Fusion(method="rrf", k=60))
    scale = 4.0 * 61 / 2  # the best of both lists would score the best text score
    assert fused[A] == pytest.approx(scale / 61)
    assert fused[B] == pytest.approx(scale / 62)
    assert fused[C] == pytest.approx(scale / 63 + scale / 61)  # in both: first
    assert fused[D] == pytest.approx(scale / 62)  # only nearest, second: ties with B
    assert max(fused, key=fused.__getitem__) == C


def test_rrf_fuses_only_the_depth_of_each_list() -> None:
    fused = fused_scores([(A, 2.0), (B, 1.0)], [(C, 0.5), (D, 0.4)], Fusion(depth=1))
    assert set(fused) == {A, C}


def test_weighted_adds_the_normalised_cosine_to_the_text_score() -> None:
    text = [(A, 4.0), (B, 1.0)]
    nearest = [(B, 0.9), (C, 0.7), (D, 0.5)]
    fused = fused_scores(text, nearest, Fusion(method="weighted", weight=0.5))
    assert fused[A] == pytest.approx(4.0)  # not near: its text score
    assert fused[B] == pytest.approx(1.0 + 0.5 * 4.0)  # nearest: + weight x best text
    assert fused[C] == pytest.approx(0.5 * 4.0 * 0.5)  # halfway between nearest and last
    assert fused[D] == pytest.approx(0.0)


def test_no_text_candidates_still_ranks_the_nearest() -> None:
    fused = fused_scores([], [(C, 0.9), (D, 0.1)], Fusion(method="rrf"))
    assert fused[C] > fused[D] > 0
    weighted = fused_scores([], [(C, 0.9), (D, 0.1)], Fusion(method="weighted"))
    assert weighted[C] > weighted[D] == 0  # the farthest of the nearest adds nothing


def test_scope_vectors_find_the_nearest_and_replace_a_reembedded_row() -> None:
    import numpy as np

    vectors = ScopeVectors()

    def raw(v: list[float]) -> bytes:
        return np.asarray(v, dtype=np.float32).tobytes()

    vectors.add([(A, raw([1, 0])), (B, raw([0, 1])), (C, raw([1, 1]))])
    assert [oid for oid, _ in vectors.nearest([1, 0.1], 2)] == [A, C]
    vectors.add([(A, raw([0, 1]))])  # A's text changed: its new vector replaces the old
    assert len(vectors.ids) == 3
    assert [oid for oid, _ in vectors.nearest([1, 0.1], 1)] == [C]
    assert vectors.nearest([1, 0, 0], 1) == []  # another dimension: nothing comparable


def test_late_fusion_reorders_the_final_ranking_and_keeps_the_rest_in_text_order() -> None:
    from streams.search.ranking import Candidate
    from streams.search.vectors import late_fusion

    a, b, c, d = (Candidate(oid, terms={"t": 4.0 - i}) for i, oid in enumerate((A, B, C, D)))
    ranked = [(a, 4.0), (b, 3.0), (c, 2.0), (d, 1.0)]
    out = late_fusion(ranked, [(D, 0.9)], Fusion(method="late", depth=2))
    order = [cand.observation_id for cand, _ in out]
    # D (nearest first) ties A (text first); B second in text; C fused in neither list.
    assert set(order[:2]) == {A, D} and order[2:] == [B, C]
    assert out[0][1] == pytest.approx(4.0 * 61 / 2 / 61)
    assert all(cand.score == pytest.approx(score) for cand, score in out)
