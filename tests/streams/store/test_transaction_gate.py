"""At most N store transactions of a process open at once (`streams.store.transaction_gate`).

Under 16 concurrent adds the embedded store stalled for tens of seconds once a dozen
transactions were open at a time (docs/benchmarks.md, "Open transactions"); the gate
makes the others wait in the process instead, holding no snapshot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from streams.store import MemoryStore
from streams.store.client import get_client
from streams.store.flavour import choose_flavour
from streams.store.transaction_gate import TransactionGate, current_gate, process_gate


class Overlap:
    """How many threads are inside at once, at most."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self._lock = threading.Lock()

    def visit(self, seconds: float = 0.05) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(seconds)
        with self._lock:
            self.inside -= 1


def _at_once(n: int, work: Callable[[], None]) -> None:
    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)


@pytest.mark.parametrize("slots", [1, 2])
def test_no_more_than_the_slots_are_inside_at_once(slots: int) -> None:
    gate, overlap = TransactionGate(slots), Overlap()

    def work() -> None:
        with gate.slot():
            overlap.visit()

    _at_once(6, work)
    assert overlap.most == slots


def test_a_gate_of_zero_lets_everyone_in() -> None:
    gate, overlap = TransactionGate(0), Overlap()

    def work() -> None:
        with gate.slot():
            overlap.visit(0.2)

    _at_once(4, work)
    assert overlap.most == 4


def test_a_thread_holding_a_slot_enters_again_without_a_second_one() -> None:
    gate = TransactionGate(1, wait_seconds=5)
    started = time.monotonic()
    with gate.slot(), gate.slot(), gate.slot():
        pass
    assert time.monotonic() - started < 1  # no wait for a slot it holds itself
    with gate.slot():  # and the slot was given back whole
        pass


def test_a_thread_that_cannot_have_a_slot_goes_ahead_after_the_wait(caplog) -> None:
    gate = TransactionGate(1, wait_seconds=0.2)
    held, release, went = threading.Event(), threading.Event(), []

    def holder() -> None:
        with gate.slot():
            held.set()
            release.wait(10)

    def waiter() -> None:
        with gate.slot():
            went.append(time.monotonic())

    first = threading.Thread(target=holder)
    first.start()
    held.wait(5)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="streams.store.transaction_gate"):
        second = threading.Thread(target=waiter)
        second.start()
        second.join(5)
    release.set()
    first.join(5)
    assert went and 0.15 <= went[0] - started < 3  # slowed down, never deadlocked
    assert "no store transaction slot" in caplog.text
    with gate.slot():  # the holder's slot came back; the waiter took none to give back
        pass


def test_every_store_object_of_a_process_shares_its_gate() -> None:
    assert process_gate(3) is process_gate(3)
    assert process_gate(3) is not process_gate(1)
    assert current_gate() is process_gate(1)  # the one the process's store named last


@pytest.mark.parametrize("slots", [1, 0])
def test_concurrent_store_transactions_wait_for_the_slot(embedded_mongo, memory_db, slots) -> None:
    """The store's own transactions go through the gate: with one slot no two are open at
    once; without the gate they overlap (so this test can fail)."""
    store = MemoryStore(get_client(embedded_mongo.uri), memory_db, transactions_per_process=slots)
    probe, overlap = store.db["gate_probe"], Overlap()
    probe.insert_many([{"_id": n, "n": 0} for n in range(6)])

    def add(n: int) -> None:
        def work(session) -> None:
            probe.find_one({"_id": n}, session=session)  # the transaction is open from here
            overlap.visit()
            probe.update_one({"_id": n}, {"$inc": {"n": 1}}, session=session)

        store.in_transaction(work)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(d["n"] for d in probe.find({})) == [1] * 6
    assert overlap.most == 1 if slots == 1 else overlap.most > 1


@pytest.mark.parametrize(("flavour", "slots"), [("embedded", 1), ("mongodb", 0)])
def test_unset_the_flavour_decides_the_slots(embedded_mongo, memory_db, flavour, slots) -> None:
    """MEMORY_STORE_TRANSACTIONS_PER_PROCESS unset: one on the embedded store, no limit on
    MongoDB (docs/store.md); a value set wins on either."""
    client = get_client(embedded_mongo.uri)
    try:
        unset = MemoryStore(client, memory_db, flavour=flavour)
        assert unset.transaction_gate.slots == slots
        three = MemoryStore(client, memory_db, transactions_per_process=3)
        assert three.transaction_gate.slots == 3
    finally:
        choose_flavour(client, None)
