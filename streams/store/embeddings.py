"""Observation embeddings: written in the background by time windows of `_id`, read with
the search candidates. Vectors live on the observation documents (`embedding`,
`embedding_model`); `memory_embedding_state` keeps the background cursor.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.database import Database

from streams.documents import Observation
from streams.store.indexes import IndexSpec, index

OBSERVATIONS = "memory_observations"
STATE = "memory_embedding_state"
# The background walk reads closed `_id` windows of the log. mongod serves them from its
# `_id` index; the embedded store only from a declared index led by `_id` (it scanned the
# collection otherwise: ~1 s per window at 10,000 documents, per the legacy migration).
INDEXES: list[IndexSpec] = [index(OBSERVATIONS, "_id", "embedding_model")]
CURSOR_ID = "observations"


class EmbeddingRepository:
    def __init__(self, db: Database) -> None:
        self.observations = db[OBSERVATIONS]
        self.state = db[STATE]

    def cursor(self) -> datetime | None:
        doc = self.state.find_one({"_id": CURSOR_ID})
        return doc["at"] if doc else None

    def advance(self, at: datetime) -> None:
        self.state.update_one({"_id": CURSOR_ID}, {"$set": {"at": at}}, upsert=True)

    def window(self, *, after: ObjectId, before: ObjectId, limit: int) -> list[dict[str, Any]]:
        """Observations created in (after, before), oldest first: a closed `_id` range."""
        cursor = (
            self.observations.find(
                {"_id": {"$gt": after, "$lt": before}},
                {"content": 1, "deleted_at": 1, "embedding_model": 1},
            )
            .sort("_id", 1)
            .limit(limit)
        )
        return list(cursor)

    def save(self, vectors: dict[ObjectId, list[float]], *, model: str) -> None:
        if vectors:
            self.observations.bulk_write(
                [
                    UpdateOne({"_id": oid}, {"$set": {"embedding": v, "embedding_model": model}})
                    for oid, v in vectors.items()
                ],
                ordered=False,
            )

    def with_vectors(
        self, observation_ids: list[ObjectId], *, model: str
    ) -> list[tuple[Observation, list[float] | None]]:
        """The observations by id, in the order asked, each with its vector for `model`."""
        if not observation_ids:
            return []
        by_id = {d["_id"]: d for d in self.observations.find({"_id": {"$in": observation_ids}})}
        found = []
        for oid in observation_ids:
            doc = by_id.get(oid)
            if doc is None:
                continue
            vector = doc.get("embedding") if doc.get("embedding_model") == model else None
            found.append((Observation.from_mongo(doc), vector))
        return found
