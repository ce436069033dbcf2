"""`memory_usage` and `memory_usage_top`: LLM usage counters, written as each job finishes.

`memory_usage` holds one document per (agent, UTC day, dimension, key), where the
dimension is "agent" (key ""), "prompt" ("<kind> v<version>") or "model";
`memory_usage_scopes` the same per scope (dimension "scope", key the scope id).
A job increments at most four of them, by `_id`, with `$inc`. Every read
is bounded by the number of days asked for: an agent's totals over 30 days are 30
documents, a scope's are 30, whatever the number of scopes.

`memory_usage_top` keeps, per day, the scopes that cost most and the scopes with the
largest pending backlog (at most `TOP_KEPT` each), so the dashboard ranks scopes
without reading one document per scope; updated with the version in the filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_usage"
# Per-scope counters live apart, so an agent's own counters stay a few documents a day
# however many scopes it has (measured: a shared collection made the agent reads grow).
SCOPES = "memory_usage_scopes"
TOP = "memory_usage_top"
TOP_KEPT = 50
INDEXES: list[IndexSpec] = [
    # An agent's documents of one dimension over a closed range of days.
    index(COLLECTION, "agent_id", "dim", "day"),
    # One scope's documents over a closed range of days.
    index(SCOPES, "key", "day"),
]


def usage_id(agent_id: str, day: str, dim: str, key: str) -> str:
    return f"{agent_id}|{day}|{dim}|{key}"


class UsageRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]
        self.scopes = db[SCOPES]
        self.top = db[TOP]

    def _of(self, dim: str) -> Any:
        return self.scopes if dim == "scope" else self.collection

    def increment(
        self, *, agent_id: str, day: str, dim: str, key: str, counts: Mapping[str, int | float]
    ) -> None:
        self._of(dim).update_one(
            {"_id": usage_id(agent_id, day, dim, key)},
            {
                "$inc": counts,
                "$setOnInsert": {"agent_id": agent_id, "day": day, "dim": dim, "key": key},
            },
            upsert=True,
        )

    def get(self, agent_id: str, day: str, dim: str, key: str) -> dict[str, Any] | None:
        return self._of(dim).find_one({"_id": usage_id(agent_id, day, dim, key)})

    def for_agent(
        self, *, agent_id: str, dim: str, first: str, last: str, limit: int
    ) -> list[dict[str, Any]]:
        query = {"agent_id": agent_id, "dim": dim, "day": {"$gte": first, "$lte": last}}
        return list(self.collection.find(query).limit(limit))

    def for_scope(self, *, scope_id: str, first: str, last: str, days: int) -> list[dict]:
        query = {"key": scope_id, "day": {"$gte": first, "$lte": last}}
        return list(self.scopes.find(query).limit(days))

    # -- the per-day rankings ------------------------------------------------------

    def top_get(self, day: str) -> dict[str, Any] | None:
        return self.top.find_one({"_id": day})

    def top_days(self, days: list[str]) -> list[dict[str, Any]]:
        return list(self.top.find({"_id": {"$in": days}}))

    def top_replace(self, day: str, *, version: int, fields: dict[str, Any]) -> bool:
        """Write the day's rankings if nobody else did since `version` was read."""
        if version == 0:
            doc = {"_id": day, "version": 1, **fields}
            try:
                self.top.insert_one(doc)
            except DuplicateKeyError:  # a concurrent first writer: the caller re-reads
                return False
            return True
        done = self.top.update_one(
            {"_id": day, "version": version}, {"$set": {**fields, "version": version + 1}}
        )
        return done.matched_count == 1
