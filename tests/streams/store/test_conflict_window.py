"""The conflict window opens at the first conflict, not when the transaction starts.

Under load (`benchmarks concurrency`, batch adds at 16 clients) one attempt took longer
than the window; a write conflict met then was answered 503 `busy` without a single
retry, though a retry would have gone through. A writer that died holding the
documents still makes a request 503 within the window (`tests/api/test_orphan_transaction.py`).
"""

from __future__ import annotations

import time

import pytest

from streams.core.exceptions import Busy
from streams.store import MemoryStore

WINDOW = 0.3


@pytest.fixture
def windowed(store: MemoryStore) -> MemoryStore:
    store.db["window_probe"].insert_one({"_id": "x", "n": 0})
    store.conflict_seconds = WINDOW
    return store


def test_a_slow_first_attempt_that_meets_a_conflict_is_retried(windowed: MemoryStore) -> None:
    probe = windowed.db["window_probe"]
    attempts: list[int] = []

    def work(session) -> int:
        attempts.append(len(attempts) + 1)
        probe.find_one({"_id": "x"}, session=session)  # the snapshot starts here
        if len(attempts) == 1:
            probe.update_one({"_id": "x"}, {"$inc": {"n": 100}})  # another writer, committed
            time.sleep(WINDOW * 2)  # a slow attempt: longer than the whole window
        probe.update_one({"_id": "x"}, {"$inc": {"n": 1}}, session=session)
        return len(attempts)

    assert windowed.in_transaction(work) == 2
    assert probe.find_one({"_id": "x"})["n"] == 101


def test_conflicts_that_go_on_past_the_window_are_busy(windowed: MemoryStore) -> None:
    probe = windowed.db["window_probe"]
    started = time.monotonic()

    def work(session) -> None:
        probe.find_one({"_id": "x"}, session=session)
        probe.update_one({"_id": "x"}, {"$inc": {"n": 100}})  # every attempt meets one
        probe.update_one({"_id": "x"}, {"$inc": {"n": 1}}, session=session)

    with pytest.raises(Busy):
        windowed.in_transaction(work)
    assert time.monotonic() - started < WINDOW + 2.0
    assert probe.find_one({"_id": "x"})["n"] % 100 == 0  # none of its own writes committed
