"""How many chat calls may wait on the upstream at once, per API key and per web process.

A chat call holds its web thread for as long as the upstream takes to answer (a
streamed answer for its whole length). With a slow upstream, chat calls alone could
hold every thread of a process, and context and ingest calls, which need no upstream,
would queue behind them. So a process lets at most `MEMORY_CHAT_MAX_CONCURRENT` chat
calls wait on the upstream, and one key at most `MEMORY_CHAT_MAX_CONCURRENT_PER_KEY`
of them. A call past either cap is refused at once, before any memory work: 429 for
the key's cap (that caller should slow down), 503 for the process's (everyone is
waiting on the upstream), both with `Retry-After`, in the API's envelope. The
`openai` client retries both by itself, honouring `Retry-After`.

Counted in the process (a threading lock, nothing shared): a killed worker takes its
counts with it, and each worker's threads are what the caps protect.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

RETRY_AFTER_SECONDS = 2


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    message: str
    limit: int


class ChatSlots:
    """The process's chat calls in flight, in total and per key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._per_key: Counter[object] = Counter()
        self._total = 0

    def take(self, key_id: object) -> Callable[[], None] | Refusal:
        """A release function for the slot now taken (safe to call twice), or the Refusal."""
        per_process = settings.MEMORY_CHAT_MAX_CONCURRENT
        per_key = settings.MEMORY_CHAT_MAX_CONCURRENT_PER_KEY
        with self._lock:
            if per_key > 0 and self._per_key[key_id] >= per_key:
                return Refusal(
                    429,
                    "too_many_concurrent_chats",
                    f"this key already has {per_key} chat calls in flight on this server; "
                    "retry when one has finished",
                    per_key,
                )
            if per_process > 0 and self._total >= per_process:
                return Refusal(
                    503,
                    "chat_busy",
                    f"this server already has {per_process} chat calls waiting on the "
                    "upstream; retry shortly",
                    per_process,
                )
            self._per_key[key_id] += 1
            self._total += 1
        released = threading.Event()

        def release() -> None:
            with self._lock:
                if released.is_set():
                    return
                released.set()
                self._total -= 1
                self._per_key[key_id] -= 1
                if self._per_key[key_id] <= 0:
                    del self._per_key[key_id]

        return release

    @property
    def in_flight(self) -> int:
        return self._total


chat_slots = ChatSlots()
