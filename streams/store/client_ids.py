"""`memory_observation_client_ids`: which observation a caller's `client_id` created.

One document per (scope, client id), keyed `_id` "<scope hex>:<client id>", so the
uniqueness that makes a batch idempotent is the `_id` index itself (no partial
index: the embedded store never uses one whose filter is `$exists`). It is written
in the transaction that inserts the observations: a batch is either stored with its
keys or not at all, and a concurrent re-send of the same key fails on the key.
"""

from __future__ import annotations

from datetime import datetime

from bson import ObjectId
from pymongo import InsertOne
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import BulkWriteError, DuplicateKeyError

from streams.core.exceptions import Conflict
from streams.store.indexes import IndexSpec, index
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_observation_client_ids"
INDEXES: list[IndexSpec] = [
    # Forget user and hard deletes remove the keys of the observations they remove.
    index(COLLECTION, "observation_id"),
    index(COLLECTION, "scope_id"),
]


def client_key(scope_id: ObjectId, client_id: str) -> str:
    return f"{scope_id}:{client_id}"


class ClientIdRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def find(
        self, scope_id: ObjectId, client_ids: list[str], *, session: ClientSession | None = None
    ) -> dict[str, ObjectId]:
        """The observation each of these client ids created in the scope (known ones only)."""
        if not client_ids:
            return {}
        keys = [client_key(scope_id, c) for c in client_ids]
        cursor = self.collection.find({"_id": {"$in": keys}}, session=session)
        return {d["client_id"]: d["observation_id"] for d in cursor}

    def find_with_digests(
        self, scope_id: ObjectId, client_ids: list[str], *, session: ClientSession | None = None
    ) -> dict[str, tuple[ObjectId, str | None]]:
        """As `find`, with the digest of the content each key was first sent with (None
        for keys recorded before digests were kept, or by writers that keep none)."""
        if not client_ids:
            return {}
        keys = [client_key(scope_id, c) for c in client_ids]
        cursor = self.collection.find({"_id": {"$in": keys}}, session=session)
        return {d["client_id"]: (d["observation_id"], d.get("content_digest")) for d in cursor}

    def insert(
        self,
        scope_id: ObjectId,
        pairs: list[tuple[str, ObjectId]],
        *,
        now: datetime,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
        digests: dict[str, str] | None = None,
    ) -> None:
        """Record (client id, observation id) pairs, each with the digest of the content
        its caller sent (`digests`, by client id, when the caller keeps one); a key
        already taken raises `Conflict` (a concurrent batch with the same key won: retry,
        and find it), with `writes` when the batch is sent."""
        if not pairs:
            return
        docs = [
            {
                "_id": client_key(scope_id, client_id),
                "scope_id": scope_id,
                "client_id": client_id,
                "observation_id": observation_id,
                "created_at": now,
                **(
                    {"content_digest": digests[client_id]}
                    if digests and client_id in digests
                    else {}
                ),
            }
            for client_id, observation_id in pairs
        ]
        if writes is not None:
            for doc in docs:
                writes.add(InsertOne(doc, namespace=self.collection.full_name))
            return
        try:
            self.collection.insert_many(
                docs,
                ordered=True,
                session=session,
            )
        except (BulkWriteError, DuplicateKeyError) as exc:
            if isinstance(exc, BulkWriteError) and not all(
                e.get("code") == 11000 for e in exc.details.get("writeErrors", [])
            ):
                raise
            raise Conflict("a client_id of the batch was stored concurrently; retry") from exc

    def forget_observations(self, observation_ids: list[ObjectId]) -> int:
        """Hard-deleted observations take their keys with them (a re-send then adds anew)."""
        if not observation_ids:
            return 0
        return self.collection.delete_many(
            {"observation_id": {"$in": observation_ids}}
        ).deleted_count

    def forget_scope(self, scope_id: ObjectId) -> int:
        return self.collection.delete_many({"scope_id": scope_id}).deleted_count
