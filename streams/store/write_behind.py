"""Records written behind the hot path: the context log's entries, inserted once a second.

A context call must not wait for its log record (the log is for people reading it
later), so the record joins this process's queue and a background thread inserts the
queued records together (one `insert_many` per collection), as `access_log` does for
access counts. A failed write is logged and counted, never raised to the caller: the
count is on `/api/v1/health` style readers through `failures()`. A process killed
within the interval loses those records (a clean exit writes them).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any

from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, InvalidOperation, PyMongoError

logger = logging.getLogger("streams.write_behind")

_Key = tuple[int, str, str]
_pending: dict[_Key, tuple[Collection, list[dict[str, Any]]]] = {}
_lock = threading.Lock()
_flusher_pid: int | None = None
_interval = 1.0
_wake = threading.Event()
_failures = 0
MAX_PENDING = 50_000  # records queued per collection; beyond it a record is dropped (counted)


def failures() -> int:
    """Records this process could not write (store down, queue full), since it started."""
    return _failures


def count_failure(count: int = 1) -> None:
    """Count records lost before they reached this queue (the caller logs why)."""
    global _failures
    with _lock:
        _failures += count


def add(collection: Collection, doc: dict[str, Any], interval: float) -> None:
    """Queue one record, inserted within `interval` seconds."""
    key = (id(collection.database.client), collection.database.name, collection.name)
    global _failures
    with _lock:
        _ensure_flusher(interval)
        _, docs = _pending.setdefault(key, (collection, []))
        if len(docs) >= MAX_PENDING:
            _failures += 1
            logger.warning("context log: queue full, a record of %s dropped", collection.name)
            return
        docs.append(doc)


def write_now(collection: Collection, docs: list[dict[str, Any]]) -> None:
    """Insert now; a failure is logged and counted, never raised."""
    if not docs:
        return
    try:
        collection.insert_many(docs, ordered=False)
    except InvalidOperation:  # its client was closed: its owner is done with it
        count_failure(len(docs))
    except BulkWriteError as exc:  # some were written: count the others
        failed = len(exc.details.get("writeErrors") or []) or len(docs)
        count_failure(failed)
        logger.warning("%d records of %s not written: %s", failed, collection.name, exc)
    except PyMongoError as exc:
        count_failure(len(docs))
        logger.warning("%d records of %s not written: %s", len(docs), collection.name, exc)


_writing = threading.Lock()  # one flush at a time: a caller's flush waits for one in flight


def flush() -> None:
    """Write everything queued now (the flusher's round; a clean exit; forget-user; tests).
    Returns once nothing queued before the call is still being written."""
    with _writing:
        with _lock:
            batches = list(_pending.values())
            _pending.clear()
        for collection, docs in batches:
            write_now(collection, docs)


def _ensure_flusher(interval: float) -> None:
    """This process's flusher thread (again after a fork). Called under `_lock`."""
    global _flusher_pid, _interval
    if _flusher_pid == os.getpid():
        if interval < _interval:
            _interval = interval
            _wake.set()
        return
    _pending.clear()
    _flusher_pid, _interval = os.getpid(), interval
    threading.Thread(target=_flush_every, name="write-behind", daemon=True).start()


def _flush_every() -> None:
    while True:
        if _wake.wait(_interval):
            _wake.clear()
            continue
        try:
            flush()
        except Exception:  # the thread must outlive any one round
            logger.exception("write-behind flush failed")


atexit.register(flush)
