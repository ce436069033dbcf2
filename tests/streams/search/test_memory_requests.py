"""The explicit remember and forget rules, measured on the labelled table."""

from __future__ import annotations

import pytest

from streams.search.memory_requests import memory_request_of
from tests.streams import retrieval_cases
from tests.streams.memory_request_cases import CASES


def test_labelled_table_has_no_false_positive_or_negative() -> None:
    assert len(CASES) >= 50
    wrong = []
    for message, kind, topic in CASES:
        found = memory_request_of(message)
        got = (found.kind, found.topic) if found else (None, None)
        if got != (kind, topic):
            wrong.append((message, (kind, topic), got))
    assert wrong == []


@pytest.mark.parametrize(
    "message", [m for m, needed in retrieval_cases.CASES if needed and "remember" in m.lower()]
)
def test_the_retrieval_tables_recall_phrases_are_no_remember_requests(message: str) -> None:
    found = memory_request_of(message)
    assert found is None or found.kind != "remember", message
