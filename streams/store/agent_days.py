"""`memory_agent_days`: per agent and UTC day, how many observations and consolidations were made.

Counted as data is written (an upserted `$inc` after the write commits), so the
dashboard's chart reads a few documents per agent and day instead of counting a
million observations. A short add counts inside its transaction on a shard
(`memory_agent_day_shards`, `streams.store.counter_shards`), so that concurrent adds
for one agent do not conflict on the day's document; the reads sum them in.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pymongo import UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.core.exceptions import Conflict
from streams.store.counter_shards import SHARDS, CounterShards, folded
from streams.store.indexes import IndexSpec, index
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_agent_days"
SHARD_COLLECTION = "memory_agent_day_shards"
INDEXES: list[IndexSpec] = [
    # One counter document per (agent, day); a chart reads a closed range of days.
    index(COLLECTION, "agent_id", "day", unique=True),
    # Its shards (written by `_id`), read by the same range.
    index(SHARD_COLLECTION, "agent_id", "day"),
]


class AgentDayRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]
        self.shards = CounterShards(db[SHARD_COLLECTION], ("agent_id", "day"))

    def increment(
        self,
        agent_id: str,
        day: date,
        counts: dict[str, int],
        *,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
        sharded: bool = False,
    ) -> None:
        """Inside a transaction (`session`), two first writes of a day can race on the
        unique index: that is a `Conflict`, and the caller's transaction is retried
        (with `writes`, the batch's duplicate key is that Conflict). `sharded` (a short
        add's transaction): on this thread's shard of the day."""
        if sharded:
            key = {"agent_id": agent_id, "day": day.isoformat()}
            self.shards.increment(key, counts, session=session, writes=writes)
            return
        if writes is not None:
            writes.add(
                UpdateOne(
                    {"agent_id": agent_id, "day": day.isoformat()},
                    {"$inc": counts},
                    upsert=True,
                    namespace=self.collection.full_name,
                )
            )
            return
        try:
            self.collection.update_one(
                {"agent_id": agent_id, "day": day.isoformat()},
                {"$inc": counts},
                upsert=True,
                session=session,
            )
        except DuplicateKeyError as exc:
            if session is None:
                raise
            raise Conflict("the day's counter was created concurrently; retry") from exc

    def between(self, agent_id: str, *, first: date, last: date) -> list[dict[str, Any]]:
        """The counter documents of the days in `[first, last]` that had any activity."""
        query = {"agent_id": agent_id, "day": {"$gte": first.isoformat(), "$lte": last.isoformat()}}
        days = (last - first).days + 1
        found = {d["day"]: d for d in self.collection.find(query, {"_id": 0}).limit(days)}
        for (_, day), sums in self.shards.sums(query, limit=days * SHARDS).items():
            found[day] = folded(found.get(day, {"agent_id": agent_id, "day": day}), sums)
        return sorted(found.values(), key=lambda d: d["day"])

    def on_day(self, agent_ids: list[str], day: date) -> dict[str, dict[str, Any]]:
        """The counter documents of these agents for one day, by agent id."""
        if not agent_ids:
            return {}
        query = {"agent_id": {"$in": agent_ids}, "day": day.isoformat()}
        found = {
            d["agent_id"]: d for d in self.collection.find(query, {"_id": 0}).limit(len(agent_ids))
        }
        limit = len(agent_ids) * SHARDS
        for (agent_id, _), sums in self.shards.sums(query, limit=limit).items():
            found[agent_id] = folded(
                found.get(agent_id, {"agent_id": agent_id, "day": day.isoformat()}), sums
            )
        return found
