"""The coverage benchmark (issue 38, item 6): the hand-labelled key covers every speaker of
the dev conversations, and the offline reading agrees with it on most versions."""

from __future__ import annotations

import json

import pytest

from benchmarks.coverage import KEY, measure
from benchmarks.fidelity import LOCOMO


def test_the_key_has_three_questions_per_speaker() -> None:
    key = json.loads(KEY.read_text(encoding="utf-8"))["questions"]
    speakers = {(q["conversation"], q["speaker"]) for q in key}
    assert len(speakers) == 6 and len(key) == 18
    assert all(q["from_session"] >= 1 and q["question"].endswith("?") for q in key)


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="the dev conversations are not shipped")
def test_the_offline_reading_agrees_with_the_key_and_the_trailer_costs_little() -> None:
    scores, costs = measure()
    overall = scores["all"]
    assert overall["cases"] >= 300
    assert overall["agree"] / overall["cases"] >= 0.9
    added = sum(c["prompt_with"] - c["prompt_without"] for c in costs) / len(costs)
    assert 0 < added < 200  # three questions and the instruction: about 120 tokens
