"""`memory_consolidations`: every version of every scope's consolidation text."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.documents import ConsolidationVersion
from streams.core.screened import require_screened
from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_consolidations"
INDEXES: list[IndexSpec] = [
    # History newest first; versions are dense, so a page is an exact range of versions.
    index(COLLECTION, "scope_id", "version", unique=True),
    # Replay: the version current at a time (the newest created at or before it).
    index(COLLECTION, "scope_id", ("created_at", -1)),
]


class ConsolidationRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(self, entry: ConsolidationVersion, *, session: ClientSession | None = None) -> None:
        require_screened(entry.text, what="consolidation text")
        self.collection.insert_one(entry.to_mongo(), session=session)

    def get(self, scope_id: ObjectId, version: int) -> ConsolidationVersion | None:
        doc = self.collection.find_one({"scope_id": scope_id, "version": version})
        return ConsolidationVersion.from_mongo(doc) if doc else None

    def current_at(
        self, scope_id: ObjectId, at: datetime, *, unredacted: bool = False
    ) -> ConsolidationVersion | None:
        """The newest version created at or before `at` (with `unredacted`, the newest
        whose text no later rebuild replaced)."""
        query: dict[str, Any] = {"scope_id": scope_id, "created_at": {"$lte": at}}
        if unredacted:
            query["redacted_at"] = None
        doc = next(iter(self.collection.find(query).sort("created_at", DESCENDING).limit(1)), None)
        return ConsolidationVersion.from_mongo(doc) if doc else None

    def absorbed_between(
        self, scope_id: ObjectId, *, low_version: int, high_version: int
    ) -> list[str]:
        """The ids versions `[low_version, high_version]` absorbed, oldest version first."""
        cursor = (
            self.collection.find(
                {"scope_id": scope_id, "version": {"$gte": low_version, "$lte": high_version}},
                {"version": 1, "absorbed_observation_ids": 1},
            )
            .sort("version", ASCENDING)
            .limit(high_version - low_version + 1)
        )
        return [str(i) for d in cursor for i in d.get("absorbed_observation_ids", [])]

    def page(
        self, *, scope_id: ObjectId, below_version: int, limit: int
    ) -> list[ConsolidationVersion]:
        """Versions in `[below_version - limit, below_version)`, newest first."""
        query = {
            "scope_id": scope_id,
            "version": {"$gte": max(1, below_version - limit), "$lt": below_version},
        }
        cursor = self.collection.find(query).sort("version", DESCENDING).limit(limit)
        return [ConsolidationVersion.from_mongo(d) for d in cursor]
