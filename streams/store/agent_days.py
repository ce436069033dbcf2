"""`memory_agent_days`: per agent and UTC day, how many observations and consolidations were made.

Counted as data is written (an upserted `$inc` after the write commits), so the
dashboard's chart reads at most one document per agent and day instead of
counting a million observations.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pymongo import UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.core.exceptions import Conflict
from streams.store.indexes import IndexSpec, index
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_agent_days"
INDEXES: list[IndexSpec] = [
    # One counter document per (agent, day); a chart reads a closed range of days.
    index(COLLECTION, "agent_id", "day", unique=True),
]


class AgentDayRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def increment(
        self,
        agent_id: str,
        day: date,
        counts: dict[str, int],
        *,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None:
        """Inside a transaction (`session`), two first writes of a day can race on the
        unique index: that is a `Conflict`, and the caller's transaction is retried
        (with `writes`, the batch's duplicate key is that Conflict)."""
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
        return list(self.collection.find(query, {"_id": 0}).limit((last - first).days + 1))

    def on_day(self, agent_ids: list[str], day: date) -> dict[str, dict[str, Any]]:
        """The counter documents of these agents for one day, by agent id."""
        if not agent_ids:
            return {}
        query = {"agent_id": {"$in": agent_ids}, "day": day.isoformat()}
        return {
            d["agent_id"]: d for d in self.collection.find(query, {"_id": 0}).limit(len(agent_ids))
        }
