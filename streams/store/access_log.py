"""Access counts written behind: what context calls retrieved, summed and sent once a second.

Every context call retrieves a handful of observations and counts an access on each
(`access_count`, `last_accessed_at`). Written per call, that was the store's largest
cost: an update of each retrieved observation rewrites its index entries on the embedded
store, about 2 ms of the store's single core per call, and under a heavy writer it was
half the store's work. The same few observations of a user are retrieved call after
call, so a second's accesses fold into one `$inc` (and a `$max` on the time) per
observation, and a background thread writes them in a few transactions (one journal
sync each, where every single update had synced its own).

Access counts are statistics, not memory: a process killed within a second of a call
loses that second's increments (a clean exit flushes them), never an observation.
"""

from __future__ import annotations

import atexit
import logging
import os
import random
import threading
import time
from datetime import datetime

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.collection import Collection
from pymongo.errors import InvalidOperation, PyMongoError
from pymongo.write_concern import WriteConcern

logger = logging.getLogger("streams.access_log")

# Per target collection (its database and name, and the client it came from): the
# collection, and per observation the accesses not yet written and the latest time.
_Key = tuple[int, str, str]
_pending: dict[_Key, tuple[Collection, dict[ObjectId, tuple[int, datetime]]]] = {}
_lock = threading.Lock()
_flusher_pid: int | None = None
_interval = 1.0
_wake = threading.Event()
BATCH = 200  # observations per transaction: short enough to rarely meet a writer
ATTEMPTS = 3


def write_accesses(collection: Collection, accesses: dict[ObjectId, tuple[int, datetime]]) -> None:
    """One unacknowledged bulk write (a call that writes its own: the answer must never
    wait on statistics)."""
    if accesses:
        collection.with_options(write_concern=WriteConcern(w=0)).bulk_write(
            _updates(accesses), ordered=False
        )


def _updates(accesses: dict[ObjectId, tuple[int, datetime]]) -> list[UpdateOne]:
    return [
        UpdateOne({"_id": oid}, {"$inc": {"access_count": count}, "$max": {"last_accessed_at": at}})
        for oid, (count, at) in accesses.items()
    ]


def add(collection: Collection, ids: list[ObjectId], now: datetime, interval: float) -> None:
    """Count one access of each id, written within `interval` seconds."""
    key = (id(collection.database.client), collection.database.name, collection.name)
    with _lock:
        _ensure_flusher(interval)
        _, accesses = _pending.setdefault(key, (collection, {}))
        for oid in ids:
            count, at = accesses.get(oid, (0, now))
            accesses[oid] = (count + 1, max(at, now))


def write_accesses_together(
    collection: Collection, accesses: dict[ObjectId, tuple[int, datetime]]
) -> None:
    """The flusher's write, in transactions of at most BATCH observations: the store then
    commits, and syncs its journal, once per batch instead of once per observation (a
    thousand syncs a second had been a quarter of the store's time under load).

    A batch that meets a concurrent writer is retried a few times, then its counts are
    dropped (logged): statistics must never hold a writer up for long.
    """
    updates = _updates(accesses)
    with collection.database.client.start_session() as session:
        for start in range(0, len(updates), BATCH):
            part = updates[start : start + BATCH]
            for attempt in range(ATTEMPTS):
                try:
                    with session.start_transaction():
                        collection.bulk_write(part, ordered=False, session=session)
                    break
                except PyMongoError as exc:
                    if not exc.has_error_label("TransientTransactionError"):
                        raise
                    if attempt == ATTEMPTS - 1:
                        logger.warning(
                            "access counts of %d observations dropped: %s", len(part), exc
                        )
                    else:
                        time.sleep(random.random() * 0.05)


_writing = threading.Lock()  # one flush at a time: a caller's flush waits for one in flight


def flush() -> None:
    """Write everything pending now (the flusher's round; a clean exit; tests). Returns
    once nothing queued before the call is still being written (by this or the thread)."""
    with _writing:
        with _lock:
            batches = list(_pending.values())
            _pending.clear()
        for collection, accesses in batches:
            try:
                write_accesses_together(collection, accesses)
            except InvalidOperation:  # its client was closed: its owner is done with it
                continue
            except PyMongoError as exc:  # the store is down: these increments are lost
                logger.warning(
                    "access counts of %d observations not written: %s", len(accesses), exc
                )


def _ensure_flusher(interval: float) -> None:
    """Start this process's flusher thread (again after a fork: threads do not survive it,
    and the parent's pending accesses are the parent's to write), flushing at the
    shortest interval asked for. Called under `_lock`."""
    global _flusher_pid, _interval
    if _flusher_pid == os.getpid():
        if interval < _interval:
            _interval = interval
            _wake.set()  # sleeping out a longer interval: start the shorter one now
        return
    _pending.clear()
    _flusher_pid, _interval = os.getpid(), interval
    thread = threading.Thread(target=_flush_every, name="access-log", daemon=True)
    thread.start()


def _flush_every() -> None:
    while True:
        if _wake.wait(_interval):
            _wake.clear()
            continue
        flush()


atexit.register(flush)
