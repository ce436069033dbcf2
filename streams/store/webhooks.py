"""`memory_webhooks` (per agent: URL, events, secret, active) and `memory_webhook_deliveries`
(the outbox: one entry per hook and event, written in the change's own transaction, with
each delivery attempt pushed onto it)."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

HOOKS = "memory_webhooks"
DELIVERIES = "memory_webhook_deliveries"
INDEXES: list[IndexSpec] = [
    # An agent's hooks (the list; the outbox write asks for the active ones).
    index(HOOKS, "agent_id", "_id"),
    # The runner's pass: undelivered entries in the order they were written.
    index(DELIVERIES, "status", "_id"),
    # A hook's delivery log, newest first.
    index(DELIVERIES, "webhook_id", ("_id", -1)),
    # Forget-user: the entries that carry one of the user's observations.
    index(DELIVERIES, "object_key"),
    # The log is kept a week (retries stop after a day): the store removes older entries.
    IndexSpec(
        collection=DELIVERIES,
        keys=(("purge_at", 1),),
        name="purge_at_ttl",
        options={"expireAfterSeconds": 0},
    ),
]
MAX_HOOKS_PER_AGENT = 50
CACHE_SECONDS = 2.0  # an agent's active hooks, per process: the write path asks per change

_cache: dict[tuple[int, str, str], tuple[float, list[dict[str, Any]]]] = {}
_cache_lock = threading.Lock()


def forget_cached(database: str) -> None:
    """Drop this process's cached hook lists of a database (emptied or dropped)."""
    with _cache_lock:
        for key in [k for k in _cache if k[1] == database]:
            del _cache[key]


class WebhookRepository:
    def __init__(self, db: Database) -> None:
        self.hooks = db[HOOKS]
        self.deliveries = db[DELIVERIES]
        self._key = (id(db.client), db.name)

    # -- hooks ---------------------------------------------------------------------------

    def insert(self, doc: dict[str, Any], *, session: ClientSession | None = None) -> None:
        self.hooks.insert_one(doc, session=session)
        self._forget(doc["agent_id"])

    def get(self, hook_id: ObjectId) -> dict[str, Any] | None:
        return self.hooks.find_one({"_id": hook_id})

    def count_for_agent(self, agent_id: str, *, session: ClientSession | None = None) -> int:
        return self.hooks.count_documents(
            {"agent_id": agent_id}, limit=MAX_HOOKS_PER_AGENT + 1, session=session
        )

    def page(self, *, agent_id: str, after: ObjectId | None, limit: int) -> list[dict[str, Any]]:
        query: dict[str, Any] = {"agent_id": agent_id}
        if after is not None:
            query["_id"] = {"$gt": after}
        return list(self.hooks.find(query).sort("_id", ASCENDING).limit(limit))

    def update(
        self,
        hook_id: ObjectId,
        agent_id: str,
        fields: dict[str, Any],
        *,
        session: ClientSession | None = None,
    ) -> bool:
        result = self.hooks.update_one({"_id": hook_id}, {"$set": fields}, session=session)
        self._forget(agent_id)
        return result.matched_count == 1

    def delete(
        self, hook_id: ObjectId, agent_id: str, *, session: ClientSession | None = None
    ) -> bool:
        deleted = self.hooks.delete_one({"_id": hook_id}, session=session).deleted_count == 1
        if deleted:
            self.deliveries.delete_many({"webhook_id": hook_id}, session=session)
        self._forget(agent_id)
        return deleted

    def active_for(self, agent_id: str, *, session: ClientSession | None = None) -> list[dict]:
        """The agent's active hooks (cached a moment per process: asked on every write)."""
        key = (*self._key, agent_id)
        found = _cache.get(key)
        if found is not None and found[0] > time.monotonic():
            return found[1]
        hooks = list(
            self.hooks.find({"agent_id": agent_id, "active": True}, session=session).limit(
                MAX_HOOKS_PER_AGENT
            )
        )
        with _cache_lock:
            _cache[key] = (time.monotonic() + CACHE_SECONDS, hooks)
        return hooks

    def _forget(self, agent_id: str) -> None:
        with _cache_lock:
            _cache.pop((*self._key, agent_id), None)

    # -- the outbox ----------------------------------------------------------------------

    def enqueue(self, docs: list[dict[str, Any]], *, session: ClientSession | None) -> None:
        if docs:
            self.deliveries.insert_many(docs, session=session)

    def undelivered(self, *, limit: int) -> list[dict[str, Any]]:
        """Entries waiting for delivery, oldest first (the order they were written)."""
        cursor = self.deliveries.find({"status": "pending"}).sort("_id", ASCENDING)
        return list(cursor.limit(limit))

    def claim(self, delivery_id: ObjectId, *, now: datetime, until: datetime) -> bool:
        """Take an entry for one attempt, unless another runner holds it."""
        result = self.deliveries.update_one(
            {"_id": delivery_id, "status": "pending", "lease_until": {"$lte": now}},
            {"$set": {"lease_until": until}},
        )
        return result.matched_count == 1

    def release(self, delivery_id: ObjectId, *, now: datetime) -> None:
        """Give a claimed entry back untried (its lease ends now)."""
        self.deliveries.update_one({"_id": delivery_id}, {"$set": {"lease_until": now}})

    def record_attempt(
        self, delivery_id: ObjectId, *, attempt: dict[str, Any], fields: dict[str, Any]
    ) -> None:
        self.deliveries.update_one(
            {"_id": delivery_id}, {"$push": {"attempts": attempt}, "$set": fields}
        )

    def forget_objects(self, object_keys: list[str]) -> int:
        """Delete every entry (sent or waiting) about these objects."""
        deleted = 0
        for start in range(0, len(object_keys), 500):
            part = object_keys[start : start + 500]
            deleted += self.deliveries.delete_many({"object_key": {"$in": part}}).deleted_count
        return deleted

    def log(
        self, *, webhook_id: ObjectId, before: ObjectId | None, limit: int
    ) -> list[dict[str, Any]]:
        query: dict[str, Any] = {"webhook_id": webhook_id}
        if before is not None:
            query["_id"] = {"$lt": before}
        return list(self.deliveries.find(query).sort("_id", DESCENDING).limit(limit))
