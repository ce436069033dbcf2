"""Observation embeddings: written in the background by time windows of `_id`, read per
scope into the search's in-memory vectors (`streams.search.vectors`). Vectors live on the
observation documents: `embedding` (a BSON float32 vector, binary subtype 9: a quarter of
a list of doubles, decoded without a Python float per number, and what Atlas
`$vectorSearch` indexes), `embedding_model`, and `embedding_seq` (an ObjectId taken when
the vector is saved, so a process reads only the vectors saved since it last looked);
`memory_embedding_state` keeps the background cursor.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from bson.binary import Binary, BinaryVectorDtype
from pymongo import UpdateOne
from pymongo.database import Database

from streams.core.documents import Observation
from streams.store.indexes import IndexSpec, RetiredIndex, index

OBSERVATIONS = "memory_observations"
STATE = "memory_embedding_state"
# The background walk reads closed `_id` windows of the log. mongod serves them from its
# `_id` index; the embedded store only from a declared index led by `_id` (it scanned the
# collection otherwise: ~1 s per window at 10,000 documents, per the legacy migration).
INDEXES: list[IndexSpec] = [
    index(OBSERVATIONS, "_id", "embedding_model"),
    # A scope's vectors saved since a process last read them (one equality per scope).
    index(OBSERVATIONS, "scope_id", "embedding_model", "embedding_seq"),
    # Observations whose text changed after they were embedded (few at any time); sparse:
    # only they hold the field (every add wrote a null entry).
    IndexSpec(
        collection=OBSERVATIONS,
        keys=(("embedding_stale", 1),),
        name="embedding_stale_sparse",
        options={"sparse": True},
    ),
]
RETIRED_INDEXES = (
    RetiredIndex(
        OBSERVATIONS, "embedding_stale_1", "replaced by the sparse embedding_stale_sparse"
    ),
)
CURSOR_ID = "observations"
SETTLE = timedelta(seconds=5)  # a vector saved this recently may not be committed yet


def encode_vector(vector: list[float]) -> Binary:
    return Binary.from_vector([float(x) for x in vector], BinaryVectorDtype.FLOAT32)


def decode_vector(stored: Any) -> list[float] | None:
    """A stored vector as floats: binary (this version) or a list (written before it)."""
    if isinstance(stored, Binary):
        return list(stored.as_vector().data)
    if isinstance(stored, list):
        return [float(x) for x in stored]
    return None


class EmbeddingRepository:
    def __init__(self, db: Database) -> None:
        self.observations = db[OBSERVATIONS]
        self.state = db[STATE]

    def cursor(self) -> datetime | None:
        doc = self.state.find_one({"_id": CURSOR_ID})
        return doc["at"] if doc else None

    def advance(self, at: datetime) -> None:
        self.state.update_one({"_id": CURSOR_ID}, {"$set": {"at": at}}, upsert=True)

    def oldest(self) -> datetime | None:
        """When the first observation was created (where a backfill starts)."""
        doc = self.observations.find_one(
            {"_id": {"$gte": ObjectId.from_datetime(datetime(1970, 1, 2, tzinfo=UTC))}},
            {"_id": 1},
            sort=[("_id", 1)],
        )
        return doc["_id"].generation_time if doc else None

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

    def stale(self, *, limit: int) -> list[dict[str, Any]]:
        """Observations edited since they were embedded, whatever their age."""
        cursor = self.observations.find(
            {"embedding_stale": True}, {"content": 1, "deleted_at": 1}
        ).limit(limit)
        return list(cursor)

    def unmark_stale(self, ids: list[ObjectId]) -> None:
        if ids:
            self.observations.update_many(
                {"_id": {"$in": ids}}, {"$unset": {"embedding_stale": ""}}
            )

    def save(self, vectors: dict[ObjectId, list[float]], *, model: str) -> None:
        if vectors:
            self.observations.bulk_write(
                [
                    UpdateOne(
                        {"_id": oid},
                        {
                            "$set": {
                                "embedding": encode_vector(v),
                                "embedding_model": model,
                                "embedding_seq": ObjectId(),
                            },
                            "$unset": {"embedding_stale": ""},
                        },
                    )
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
            same = doc.get("embedding_model") == model
            vector = decode_vector(doc.get("embedding")) if same else None
            found.append((Observation.from_mongo(doc), vector))
        return found

    def saved_since(
        self, scope_id: ObjectId, *, model: str, since: datetime | None
    ) -> list[tuple[ObjectId, bytes]]:
        """The scope's vectors for `model` saved since `since` (all without it), as raw
        float32 bytes. A closed range: one scan of what it matches (a first read loads
        the whole scope, later ones only the last seconds' vectors)."""
        low = since if since is not None else datetime(1970, 1, 2, tzinfo=UTC)
        high = datetime.now(UTC) + timedelta(days=1)
        cursor = self.observations.find(
            {
                "scope_id": scope_id,
                "embedding_model": model,
                "embedding_seq": {
                    "$gte": ObjectId.from_datetime(low),
                    "$lt": ObjectId.from_datetime(high),
                },
            },
            {"embedding": 1},
            batch_size=10_000,
        )
        rows = []
        for doc in cursor:
            stored = doc.get("embedding")
            if isinstance(stored, Binary) and stored.subtype == 9:
                rows.append((doc["_id"], bytes(stored)[2:]))  # after the dtype and padding
            elif isinstance(stored, list):
                rows.append((doc["_id"], bytes(encode_vector(stored))[2:]))
        return rows
