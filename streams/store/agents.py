"""`memory_agents`: one document per agent with the counters pages show often.

Counters are kept, not counted: `count_documents` over a million observations
is too slow for a dashboard. They are adjusted right after the write they
describe commits (outside its transaction, so one hot document per agent does
not make every formation conflict); `recount` repairs any drift. A short add counts
inside its transaction on a shard (`memory_agent_shards`, `streams.store.counter_shards`)
so that concurrent adds for one agent do not conflict; every read sums them in.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.core.documents import Agent
from streams.store.counter_shards import SHARDS, CounterShards, folded
from streams.store.indexes import IndexSpec, index
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_agents"
SHARD_COLLECTION = "memory_agent_shards"
INDEXES: list[IndexSpec] = [
    # The busiest agent (the page a dashboard opens on); every other query is by `_id`.
    index(COLLECTION, ("observation_count", -1), ("scope_count", -1), "_id"),
    # An agent's counter shards, summed into every read of it (writes go by `_id`).
    index(SHARD_COLLECTION, "agent_id"),
]


class AgentRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]
        self.shards = CounterShards(db[SHARD_COLLECTION], ("agent_id",))

    def _with_shards(
        self, docs: list[dict[str, Any]], *, session: ClientSession | None = None
    ) -> list[Agent]:
        """Agents from their base documents, each with its shards summed in."""
        if not docs:
            return []
        ids = [d["_id"] for d in docs]
        sums = self.shards.sums(
            {"agent_id": {"$in": ids}}, limit=len(ids) * SHARDS, session=session
        )
        return [Agent.from_mongo(folded(d, sums.get((d["_id"],)))) for d in docs]

    def ensure(self, agent_id: str, *, now: datetime, session: ClientSession | None = None) -> None:
        """Create the agent's document on first use. Every ingest calls this: a read by `_id`
        costs the store less than an insert refused as a duplicate, which it would be."""
        if self.collection.find_one({"_id": agent_id}, {"_id": 1}, session=session) is not None:
            return
        with contextlib.suppress(DuplicateKeyError):
            self.collection.insert_one(
                {
                    "_id": agent_id,
                    "scope_seq": 0,
                    "scope_count": 0,
                    "observation_count": 0,
                    "pending_count": 0,
                    "created_at": now,
                    "last_activity_at": now,
                },
                session=session,
            )

    def get(self, agent_id: str, *, session: ClientSession | None = None) -> Agent | None:
        doc = self.collection.find_one({"_id": agent_id}, session=session)
        return self._with_shards([doc], session=session)[0] if doc else None

    def set_memory_tool(
        self, agent_id: str, memory_tool: str, *, session: ClientSession | None = None
    ) -> None:
        """The agent's chat-proxy memory tool setting (`off` or `search_memory`)."""
        self.collection.update_one(
            {"_id": agent_id}, {"$set": {"memory_tool": memory_tool}}, session=session
        )

    def settings(self, agent_id: str) -> Agent | None:
        """The agent as its own document holds it, without the counter shards `get` sums
        in: for readers of its settings (ranking, limits, models), one read by id."""
        doc = self.collection.find_one({"_id": agent_id})
        return Agent.from_mongo(doc) if doc else None

    def set_ranking(
        self, agent_id: str, ranking: dict[str, bool], *, session: ClientSession | None = None
    ) -> None:
        """The agent's lifecycle ranking switches (only those set; the rest inherit)."""
        self.collection.update_one(
            {"_id": agent_id}, {"$set": {"ranking": dict(ranking)}}, session=session
        )

    def set_limits(
        self, agent_id: str, limits: dict[str, Any], *, session: ClientSession | None = None
    ) -> None:
        """The agent's limit and model settings (`extraction_model`, `scope_defaults`):
        a None value is removed (the code's default applies again)."""
        unset = {name: "" for name, value in limits.items() if value is None}
        update: dict[str, Any] = {}
        if kept := {name: value for name, value in limits.items() if value is not None}:
            update["$set"] = kept
        if unset:
            update["$unset"] = unset
        if update:
            self.collection.update_one({"_id": agent_id}, update, session=session)

    def list_page(self, *, after: str | None, limit: int) -> list[Agent]:
        query = {"_id": {"$gt": after or ""}}
        return self._with_shards(list(self.collection.find(query).sort("_id", 1).limit(limit)))

    def busiest(self, *, limit: int = 10_000) -> Agent | None:
        """The agent with the most observations (then the most scopes, then by id), its
        shards counted: the agents with shards (their shards at most `limit`) are summed
        exactly; among the others the base index's order is the true order, so its first
        one not among them is the best of the rest."""
        sums = self.shards.sums({"agent_id": {"$gte": ""}}, limit=limit)
        sharded = sorted(key[0] for key in sums)
        candidates = list(self.collection.find({"_id": {"$in": sharded}}).limit(len(sharded)))
        ranked = self.collection.find({"observation_count": {"$gte": 0}}).sort(
            [("observation_count", -1), ("scope_count", -1), ("_id", 1)]
        )
        candidates += [d for d in ranked.limit(len(sharded) + 1) if d["_id"] not in sums][:1]
        agents = [Agent.from_mongo(folded(d, sums.get((d["_id"],)))) for d in candidates]
        if not agents:
            return None
        return min(agents, key=lambda a: (-a.observation_count, -a.scope_count, a.id))

    def allocate_scope_seq(self, agent_id: str, *, session: ClientSession | None = None) -> int:
        """The next scope sequence number of the agent: read, then a conditional increment."""
        while True:
            doc = self.collection.find_one({"_id": agent_id}, {"scope_seq": 1}, session=session)
            current = doc["scope_seq"] if doc else 0
            result = self.collection.update_one(
                {"_id": agent_id, "scope_seq": current},
                {"$inc": {"scope_seq": 1}},
                session=session,
            )
            if result.matched_count == 1:
                return current + 1

    def adjust_counters(
        self,
        agent_id: str,
        *,
        now: datetime,
        scopes: int = 0,
        observations: int = 0,
        pending: int = 0,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
        sharded: bool = False,
    ) -> None:
        """Adjust the agent's counters and stamp its activity; `sharded` (a short add's
        transaction): on this thread's shard, so concurrent adds do not conflict."""
        increments = {
            key: value
            for key, value in (
                ("scope_count", scopes),
                ("observation_count", observations),
                ("pending_count", pending),
            )
            if value
        }
        if sharded:
            self.shards.increment(
                {"agent_id": agent_id},
                increments,
                latest={"last_activity_at": now},
                session=session,
                writes=writes,
            )
            return
        update: dict[str, Any] = {"$set": {"last_activity_at": now}}
        if increments:
            update["$inc"] = increments
        if writes is not None:
            writes.add(UpdateOne({"_id": agent_id}, update, namespace=self.collection.full_name))
            return
        self.collection.update_one({"_id": agent_id}, update, session=session)

    def set_counters(self, agent_id: str, *, scopes: int, observations: int, pending: int) -> None:
        """Make the agent's totals these: the base is set to them less what its shards hold."""
        held = self.shards.sums({"agent_id": agent_id}, limit=SHARDS).get((agent_id,), {})
        self.collection.update_one(
            {"_id": agent_id},
            {
                "$set": {
                    "scope_count": scopes - held.get("scope_count", 0),
                    "observation_count": observations - held.get("observation_count", 0),
                    "pending_count": pending - held.get("pending_count", 0),
                }
            },
        )
