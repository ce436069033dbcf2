"""Counter shards: the add's increments spread over a few documents, summed on read.

Every add counts itself on its agent (`memory_agents`) and on the agent's day
(`memory_agent_days`) inside its own transaction. With one document each, two adds
for one agent in different scopes wrote the same document: the second one's
transaction met a write conflict and started over (16 concurrent adds: ~5 conflicts
per add, past the retry window a 503). The add now `$inc`s one of `SHARDS` shard
documents of that counter instead; a read sums the base document (what every other
writer still adjusts, and what an older version left) and the shards: exact, never
folded away.

Which shard: one per thread, assigned in turn when a thread first counts, from a block
of `THREADS_PER_PROCESS` that the process id picks: the threads of one web process never
share a shard while there are no more than `SHARDS` of them, and gunicorn's workers
(consecutive process ids, 4 threads each by default) take disjoint blocks while there are
at most `SHARDS / THREADS_PER_PROCESS` of them. Offset by the bare process id, as before,
the second worker's first thread took the first worker's second shard, and so on.
A shard is keyed by `_id` (the counter's key and the slot), so
its upsert is a write by `_id`; reads go through an index on the counter's key.
"""

from __future__ import annotations

import itertools
import os
import threading
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from streams.core.exceptions import Conflict
from streams.store.write_batch import WriteBatch

SHARDS = 16
THREADS_PER_PROCESS = 4  # gunicorn.conf.py's default threads per worker

_turns = itertools.count()
_slot = threading.local()


def shard_slot() -> int:
    """This thread's shard number, fixed for its lifetime."""
    slot = getattr(_slot, "value", None)
    if slot is None:
        slot = shard_of(os.getpid(), next(_turns))
        _slot.value = slot
    return slot


def shard_of(pid: int, turn: int) -> int:
    """The shard of a process's `turn`-th counting thread."""
    return (pid * THREADS_PER_PROCESS + turn) % SHARDS


class CounterShards:
    """The shard documents of one kind of counter; `key` fields name a counter."""

    def __init__(self, collection: Collection, key: tuple[str, ...]) -> None:
        self.collection = collection
        self.key = key

    def increment(
        self,
        key: dict[str, str],
        counts: dict[str, int],
        *,
        latest: dict[str, datetime] | None = None,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None:
        """`$inc` `counts` (and `$max` `latest`) on this thread's shard of the counter
        `key`. Two first writes of one shard racing in transactions: a `Conflict`."""
        shard_id = "#".join([*(key[name] for name in self.key), str(shard_slot())])
        update: dict[str, Any] = {"$setOnInsert": dict(key)}
        if counts:
            update["$inc"] = counts
        if latest:
            update["$max"] = latest
        if writes is not None:
            writes.add(
                UpdateOne(
                    {"_id": shard_id}, update, upsert=True, namespace=self.collection.full_name
                )
            )
            return
        try:
            self.collection.update_one({"_id": shard_id}, update, upsert=True, session=session)
        except DuplicateKeyError as exc:
            if session is None:
                raise
            raise Conflict("a counter shard was created concurrently; retry") from exc

    def sums(
        self, query: dict[str, Any], *, limit: int, session: ClientSession | None = None
    ) -> dict[tuple[str, ...], dict[str, Any]]:
        """Per counter key among the shards `query` matches (at most `limit` documents):
        the numbers summed, the datetimes their latest."""
        totals: dict[tuple[str, ...], dict[str, Any]] = {}
        for doc in self.collection.find(query, session=session).limit(limit):
            total = totals.setdefault(tuple(doc[name] for name in self.key), {})
            for field, value in doc.items():
                if field == "_id" or field in self.key:
                    continue
                if isinstance(value, datetime):
                    total[field] = max(value, total.get(field, value))
                elif isinstance(value, int | float):
                    total[field] = total.get(field, 0) + value
        return totals


def folded(base: dict[str, Any], shards: dict[str, Any] | None) -> dict[str, Any]:
    """A base document with its shards' sums added in (datetimes: the latest)."""
    if not shards:
        return base
    doc = dict(base)
    for field, value in shards.items():
        if isinstance(value, datetime):
            current = doc.get(field)
            doc[field] = value if current is None else max(current, value)
        else:
            doc[field] = doc.get(field, 0) + value
    return doc
