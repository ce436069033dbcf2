"""An add's window: a scope's newest observations, kept in each process between adds.

Every add compares what it stores with the scope's `SIMILAR_WINDOW` newest live
observations (contradictions, near duplicates: `streams.memory.observations`). Reading
them was the largest single store command of a single add: 50 documents, ~2.4 ms of
the ~12 ms a single add spent in the store on a 2-core machine.

A process keeps the window it read, per database and scope, under the scope's log
revision (`Scope.log_rev`). While the revision stands, an add reads only what was added
since (`seq` above what is kept), and an add of this process that committed puts its
own observations in without a read. Two things keep it true:

- every write that changes a stored observation's text or liveness (edit, delete,
  purge, forget, move) moves the revision, in the store's repositories
  (`streams.store.scopes.bump_log_rev`);
- an add that read a window claims the scope's log at that revision as well as at its
  sequence (`reserve_observation_seqs(expected_log_rev=...)`): a change committed in
  between makes the claim miss, and the add is retried with a fresh read.

With `CHECK` on (the test suite turns it on) each reuse is compared with a fresh read,
so a write path that changes text without moving the revision fails loudly.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from streams.core.documents import Observation, Scope
from streams.core.ids import require_object_id
from streams.store import MemoryStore, StoreSession

SIMILAR_WINDOW = 50  # how many of a scope's newest observations a new one is compared with
# What a process keeps, least recently used dropped first: at most this many scopes, and
# this many characters of text in all (a window of 50 texts of up to 4,000 characters).
MAX_SCOPES = 4096
MAX_CHARS = 8_000_000
CHECK = False

Entry = tuple[int, str, str]  # (seq, observation id, content)


class StaleWindow(AssertionError):
    """A kept window differs from the store at the same revision: some write changed an
    observation's text or liveness without moving its scope's log revision."""


@dataclass(frozen=True)
class Window:
    """A scope's newest live observations, newest first, complete up to `top` as of the
    log revision `log_rev`."""

    entries: tuple[Entry, ...]
    top: int
    log_rev: int
    # Whether reading it sent the store a command (in the caller's transaction): a
    # `bulkWrite` may not be a transaction's first command (`WriteBatch`).
    sent: bool = False

    def texts(self) -> list[tuple[str, str]]:
        """(id, content), newest first: what the checks compare with."""
        return [(oid, content) for _, oid, content in self.entries]

    @property
    def chars(self) -> int:
        return sum(len(content) for _, _, content in self.entries)


class WindowCache:
    """The windows this process read or wrote, least recently used dropped first."""

    def __init__(self, max_scopes: int = MAX_SCOPES, max_chars: int = MAX_CHARS) -> None:
        self.max_scopes = max_scopes
        self.max_chars = max_chars
        self._kept: OrderedDict[tuple[str, str], Window] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def read(self, *, store: MemoryStore, scope: Scope, session: StoreSession) -> Window:
        """The window of `scope` as the caller read it (its sequence and revision): what
        is kept, topped up by one bounded read of what came since, or read whole."""
        key = (store.name, scope.id)
        top, rev = scope.observation_seq, scope.log_rev
        low = max(0, top - SIMILAR_WINDOW)
        oid = require_object_id(scope.id, what="scope")
        with self._lock:
            kept = self._kept.get(key)
        if kept is None or kept.log_rev != rev or kept.top > top:
            entries = store.observations.live_texts_between(
                oid, low_seq=low, high_seq=top, session=session
            )
            window = Window(entries=tuple(entries), top=top, log_rev=rev, sent=top > low)
        else:
            since = max(kept.top, low)
            newer = store.observations.live_texts_between(
                oid, low_seq=since, high_seq=top, session=session
            )
            older = tuple(e for e in kept.entries if e[0] > low)
            window = Window(entries=(*newer, *older), top=top, log_rev=rev, sent=top > since)
            if CHECK:
                _check(store=store, scope=scope, window=window, session=session)
        self._keep(key, window)
        return window

    def added(self, *, store: MemoryStore, before: Scope, observations: list[Observation]) -> None:
        """After an add committed at `before`'s sequence and revision: its observations
        join the kept window (when it is the one the add read; otherwise the next add
        reads what it lacks)."""
        key = (store.name, before.id)
        fresh = sorted(
            ((o.seq, o.id, o.content) for o in observations if not o.deleted),
            reverse=True,
        )
        if not fresh or fresh[-1][0] != before.observation_seq + 1:
            return
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or kept.top != before.observation_seq or kept.log_rev != before.log_rev:
                return
            top = fresh[0][0]
            low = max(0, top - SIMILAR_WINDOW)
            entries = (*fresh, *(e for e in kept.entries if e[0] > low))
            self._put_locked(key, Window(entries=entries, top=top, log_rev=kept.log_rev))

    def forget_database(self, name: str) -> None:
        """Drop what is kept for database `name` (dropped, or emptied for reuse)."""
        with self._lock:
            for key in [k for k in self._kept if k[0] == name]:
                self._chars -= self._kept.pop(key).chars

    def _keep(self, key: tuple[str, str], window: Window) -> None:
        with self._lock:
            self._put_locked(key, window)

    def _put_locked(self, key: tuple[str, str], window: Window) -> None:
        old = self._kept.pop(key, None)
        if old is not None:
            self._chars -= old.chars
        self._kept[key] = window
        self._chars += window.chars
        while self._kept and (len(self._kept) > self.max_scopes or self._chars > self.max_chars):
            _, dropped = self._kept.popitem(last=False)
            self._chars -= dropped.chars


def _check(*, store: MemoryStore, scope: Scope, window: Window, session: StoreSession) -> None:
    oid = require_object_id(scope.id, what="scope")
    low = max(0, window.top - SIMILAR_WINDOW)
    fresh = store.observations.live_texts_between(
        oid, low_seq=low, high_seq=window.top, session=session
    )
    if list(window.entries) == fresh:
        return
    now = store.scopes.get(oid, session=session)
    if now is not None and now.log_rev != window.log_rev:
        return  # changed since the caller read the scope: the add's claim misses
    raise StaleWindow(
        f"scope {scope.id}: the kept window differs from the store at revision "
        f"{window.log_rev}; a write changed an observation without `bump_log_rev`"
    )


WINDOWS = WindowCache()
