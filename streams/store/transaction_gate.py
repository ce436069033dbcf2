"""At most N of a process's store transactions open at once (MEMORY_STORE_TRANSACTIONS_PER_PROCESS).

Why: an open transaction pins the store's snapshot horizon, so nothing written after it
can be cleaned from memory until it ends. On the embedded store (WiredTiger under one
Python process), 16 clients adding at once through 3 gunicorn workers × 4 threads kept
a dozen transactions open all the time, each one slowed by the others; after about 7 s
the hot pages could no longer be evicted and every write slept in the store's page-in
loop (py-spy: `__wt_page_in_func` → `__wt_sleep`), with the machine half idle: 13 to 19
adds/s over 40 s against 29 with one thread per worker (docs/benchmarks.md). A write that
waits here holds no snapshot; one that waits in the store holds its own and everyone's.

Re-entrant per thread (a transaction opened inside another one's work takes no second
slot), and bounded: a thread that cannot have a slot within `wait_seconds` goes ahead
without one (logged), so a transaction that waits on another thread of its process can
slow it down but never deadlock it. 0 turns the gate off (a real MongoDB replica set,
whose transactions do not stall each other so).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger("streams.store.transaction_gate")

WAIT_SECONDS = 30.0


class TransactionGate:
    def __init__(self, slots: int, *, wait_seconds: float = WAIT_SECONDS) -> None:
        self.slots = max(0, slots)
        self.wait_seconds = wait_seconds
        self._semaphore = threading.BoundedSemaphore(self.slots) if self.slots else None
        self._local = threading.local()

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the process's transaction slots for the block (or the thread's own,
        when it holds one already)."""
        depth = getattr(self._local, "depth", 0)
        semaphore, taken = self._semaphore, False
        if semaphore is not None and not depth:
            taken = semaphore.acquire(timeout=self.wait_seconds)
            if not taken:
                logger.warning(
                    "no store transaction slot within %.0f s (%d per process): going ahead",
                    self.wait_seconds,
                    self.slots,
                )
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if semaphore is not None and taken:
                semaphore.release()


_gates: dict[tuple[int, int], TransactionGate] = {}
_gates_lock = threading.Lock()
_current: dict[int, TransactionGate] = {}  # by pid: the gate the process's store last named


def process_gate(slots: int) -> TransactionGate:
    """The process's gate of `slots` slots: every store object of the process (one is made
    per request) shares it; a forked child gets its own."""
    key = (os.getpid(), max(0, slots))
    gate = _gates.get(key)
    if gate is None:
        with _gates_lock:
            gate = _gates.setdefault(key, TransactionGate(key[1]))
    _current[key[0]] = gate
    return gate


_OFF = TransactionGate(0)


def current_gate() -> TransactionGate:
    """The gate of the process's store, for a transaction a repository opens on its own
    (the search fold's): off until a store was made in this process."""
    return _current.get(os.getpid(), _OFF)
