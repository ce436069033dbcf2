"""`memory_audit`: one entry per write, newest first, paged by bounded `_id` windows.

The log grows without bound, and on the embedded store `limit` does not stop a
scan, so no page asks for "everything older than the cursor". A page asks for a
time window of `_id`s (ObjectIds carry their creation second) below the cursor,
under an index led by the filter's field and then `_id`, widening the window
while the page is short and stopping after a few windows with a cursor where it
stopped. `memory_audit_meta` remembers when the log began, so paging ends there
instead of walking windows back to 1970.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING, InsertOne
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.documents_audit import AuditEntry
from streams.store.indexes import IndexSpec, index
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_audit"
META = "memory_audit_meta"
INDEXES: list[IndexSpec] = [
    # One index per filter the log offers, each then newest first: every page query is
    # an equality on the filter's field plus a closed `_id` range.
    index(COLLECTION, "actor", ("_id", -1)),
    index(COLLECTION, "object_id", ("_id", -1)),
    index(COLLECTION, "action", ("_id", -1)),
    index(COLLECTION, "agent_id", ("_id", -1)),
    # The unfiltered log: a range on `_id` alone made the embedded store scan the whole
    # collection (550 ms at 10,000 entries), a range on an indexed `at` does not (10 ms).
    index(COLLECTION, ("at", -1)),
]
FIRST_WINDOW = timedelta(minutes=10)
MAX_WINDOW = timedelta(days=30)
MAX_WINDOWS = 8
NO_START_HORIZON = timedelta(days=3650)
# The recorded start of each database's log, as this process knows it (saves an upsert
# per entry: only an entry older than the known start moves it).
_STARTED: dict[tuple[int, str], datetime] = {}


def forget_started(database: str) -> None:
    """Drop the log start this process recorded for a database (emptied or dropped)."""
    for key in [k for k in _STARTED if k[1] == database]:
        _STARTED.pop(key, None)


@dataclass(frozen=True)
class AuditWindowPage:
    entries: list[AuditEntry]
    next_before: ObjectId | None  # exclusive upper bound of the next page; None at the end


class AuditRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]
        self.meta = db[META]
        self._key = (id(db.client), db.name)

    def insert(
        self,
        entry: AuditEntry,
        *,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
    ) -> str:
        """With `session`, the entry commits (or not) with the write it records. The log's
        start is moved outside it: a `$min` on one shared document would make every
        concurrent transaction conflict, and a start a little early is harmless."""
        known = _STARTED.get(self._key)
        if known is None or entry.at < known:
            self.meta.update_one({"_id": "log"}, {"$min": {"started_at": entry.at}}, upsert=True)
            _STARTED[self._key] = entry.at
        doc = entry.to_mongo()
        doc.setdefault("_id", _id_at(entry.at))
        if writes is not None:
            writes.add(InsertOne(doc, namespace=self.collection.full_name))
        else:
            self.collection.insert_one(doc, session=session)
        return str(doc["_id"])

    def started_at(self) -> datetime | None:
        doc = self.meta.find_one({"_id": "log"})
        return doc["started_at"] if doc else None

    def page(
        self,
        *,
        field: str | None,
        value: str | None,
        extra: dict[str, Any],
        before: ObjectId | None,
        since: datetime | None,
        now: datetime,
        limit: int,
    ) -> AuditWindowPage:
        """Newest first: entries with `field == value` (plus `extra`), `_id < before`, at or
        after `since`. Each query is bounded by a closed `_id` window."""
        # Without a recorded start (a database recreated under a running process), the
        # windows walk back as far as a log can reasonably reach.
        started = self.started_at() or now - NO_START_HORIZON
        floor = started - timedelta(seconds=1)
        if since is not None and since > floor:
            floor = since
        floor_id = ObjectId.from_datetime(floor)
        high = before or ObjectId.from_datetime(now + timedelta(seconds=1))
        base: dict[str, Any] = dict(extra)
        if field is not None:
            base[field] = value
        window = FIRST_WINDOW
        entries: list[AuditEntry] = []
        for _ in range(MAX_WINDOWS):
            if high <= floor_id:
                return AuditWindowPage(entries=entries, next_before=None)
            low_time = max(high.generation_time - window, floor)
            low = ObjectId.from_datetime(low_time)
            query = {**base, "_id": {"$gte": low, "$lt": high}}
            if field is None:
                # `_id` and `at` agree to the second (see `_id_at`): the window rides on
                # the `at` index, the `_id` bound only cuts at the cursor.
                query = {
                    **base,
                    "at": {
                        "$gte": low.generation_time,
                        "$lt": high.generation_time + timedelta(seconds=1),
                    },
                    "_id": {"$lt": high},
                }
            found = list(
                self.collection.find(query).sort("_id", DESCENDING).limit(limit - len(entries))
            )
            entries += [AuditEntry.from_mongo(d) for d in found]
            if len(entries) >= limit:
                return AuditWindowPage(entries=entries, next_before=found[-1]["_id"])
            high = low
            # Widen by the density seen so far: a sparse filter reaches back fast,
            # a dense one does not jump to a window it would have to scan whole.
            factor = 4 if not found else min(4.0, max(1.5, (limit - len(entries)) / len(found)))
            window = min(window * factor, MAX_WINDOW)
        done = high <= floor_id
        return AuditWindowPage(entries=entries, next_before=None if done else high)


def _id_at(at: datetime) -> ObjectId:
    """A fresh ObjectId whose time is the entry's `at`, so `_id` windows are time windows."""
    fresh = ObjectId().binary
    return ObjectId(ObjectId.from_datetime(at).binary[:4] + fresh[4:])
