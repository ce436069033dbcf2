"""Pending postings: a single add's search entry as one document, folded into the heads behind.

Indexing an add in place rewrites the head of each of its terms (about a dozen
documents, each with its open chunk and top block) inside the add's transaction: on
the embedded store that was the largest part of a single add. Instead, the add's
transaction inserts one pending document under the scope's key range, `_id`
"<scope>:+<observation>" (terms are `\\w+`: no term key holds "+"), with `d` true,
the observation's term counts `tc`, and in `k` the scope's totals key only. So it is
written with the observation and its audit entry, in the same journaled commit, and a
search finds it at once: the search's one query `{k: {$in: keys}, f: true}` asks for
each scope's totals key, so it returns every pending document of the scope with the
heads (`streams.store.search._stats` adds the postings of the asked terms, from `tc`,
and its length to what the heads say). Its term keys in `k` as well (as before issue
43) were two index entries per term (`k, f` and `f, k` are multikey), ~30 of an add's
~50, that no read needed: the totals key already finds it. Documents written that way
are read the same.

A background thread of the writing process (`fold_later`, every `INTERVAL`) folds a
scope's pending documents into its heads in one transaction: the heads it touches are
rewritten once for all of them, and the pending documents deleted. Nothing else writes
pending documents, so the fold never conflicts with an add. A process that dies before
its fold leaves them pending: still found by search, folded by the scope's next fold
(any later add, a delete in the scope, a check or rebuild of its index).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bson import ObjectId
from pymongo.errors import InvalidOperation

from streams.store.postings import Posting, signature, totals_key

logger = logging.getLogger("streams.search_pending")

INTERVAL = 2.0  # seconds between folds: more adds share a head rewrite, searches read a few more
READ_LIMIT = 2000  # pending documents read per query (a fold loops until none is left)


def pending_key(scope_id: ObjectId, observation_id: ObjectId) -> str:
    return f"{scope_id}:+{observation_id}"


def pending_document(
    scope_id: ObjectId, observation_id: ObjectId, counts: dict[str, int]
) -> dict[str, Any]:
    return {
        "_id": pending_key(scope_id, observation_id),
        "k": [totals_key(scope_id)],
        "f": True,
        "d": True,
        "scope_id": scope_id,
        "oid": observation_id,
        "tc": dict(counts),
    }


def is_pending(doc: dict[str, Any]) -> bool:
    return doc.get("d") is True


def pending_postings(doc: dict[str, Any]) -> tuple[int, dict[str, Posting]]:
    """A pending document's observation length and its posting per term."""
    counts: dict[str, int] = doc["tc"]
    length = sum(counts.values())
    bits = signature(counts)
    return length, {t: Posting(doc["oid"], n, length, bits) for t, n in counts.items()}


# -- the folder: one background thread per process --------------------------------------

_Fold = Callable[[set[ObjectId]], Any]
_queued: dict[int, tuple[_Fold, set[ObjectId]]] = {}
_lock = threading.Lock()
_folding = threading.Lock()  # one fold round at a time: `flush` waits for one in flight
_wake = threading.Event()
_folder_pid: int | None = None


def fold_later(key: int, fold: _Fold, scope_ids: set[ObjectId]) -> None:
    """Fold these scopes' pending documents within `INTERVAL` (`fold` does it; `key`
    names its index, e.g. `id()` of the repository's collection)."""
    global _folder_pid
    with _lock:
        _queued.setdefault(key, (fold, set()))[1].update(scope_ids)
        if _folder_pid != os.getpid():  # none yet, or a fork's copy of the parent's
            _folder_pid = os.getpid()
            threading.Thread(target=_fold_every, name="search-fold", daemon=True).start()


def flush() -> None:
    """Fold everything queued now (the folder's round; a clean exit; tests before a drop).
    Returns once nothing queued before the call is still being folded."""
    with _folding:
        with _lock:
            rounds = list(_queued.values())
            _queued.clear()
        for fold, scope_ids in rounds:
            try:
                fold(scope_ids)
            except InvalidOperation:  # its client was closed: its owner is done with it
                pass
            except Exception:  # pending documents stay searchable; the next fold takes them
                logger.warning("search fold of %d scopes failed", len(scope_ids), exc_info=True)


@contextmanager
def held() -> Iterator[None]:
    """No fold runs inside this block (one in flight finishes first): for a reader that
    must see only its own commands, such as a test listening to a client."""
    with _folding:
        yield


def _fold_every() -> None:
    while True:
        _wake.wait(INTERVAL)
        flush()


atexit.register(flush)
