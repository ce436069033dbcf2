"""The queries of bulk actions by filter (`streams.bulk`), on `memory_observations` and jobs.

Matching walks what a filter names through a declared index: a scope's log by closed
`seq` windows, a session's or a speaker's observations by one bounded find (the limit is
one more than `MEMORY_BULK_MAX`, so "too many" is known without counting the rest). The
other filter fields ride inside those queries. Applying writes one batch of one scope at
a time: updates by `_id` in one `bulk_write` (an `_id` `$in` of hundreds is a scan on the
embedded store), inside the transaction that also advances the job's progress.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING, UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.documents import Observation
from streams.store import jobs, observations, scopes
from streams.store.indexes import IndexSpec, index

INDEXES: list[IndexSpec] = [
    # Bulk by session: one session's observations across the agent's scopes, newest first.
    index(observations.COLLECTION, "agent_id", "source_session_id", "_id"),
]
MATCH_FIELDS = {"_id": 1, "scope_id": 1, "seq": 1}


class BulkRepository:
    def __init__(self, db: Database) -> None:
        self.observations = db[observations.COLLECTION]
        self.scopes = db[scopes.COLLECTION]
        self.jobs = db[jobs.COLLECTION]

    # -- matching ------------------------------------------------------------------------

    def scope_window(
        self, scope_id: ObjectId, *, low_seq: int, high_seq: int, extra: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """`{_id, scope_id, seq}` of the scope's observations in `low_seq < seq <= high_seq`
        that match `extra`, newest first."""
        query = {"scope_id": scope_id, "seq": {"$gt": low_seq, "$lte": high_seq}, **extra}
        cursor = (
            self.observations.find(query, MATCH_FIELDS)
            .sort("seq", DESCENDING)
            .limit(high_seq - low_seq)
        )
        return list(cursor)

    def agent_matches(
        self, agent_id: str, *, key: str, value: str, extra: dict[str, Any], limit: int
    ) -> list[dict[str, Any]]:
        """`{_id, scope_id, seq}` of the agent's observations whose `key` (`source_session_id`
        or `related_user_ids`) holds `value` and that match `extra`, newest first."""
        query = {"agent_id": agent_id, key: value, **extra}
        cursor = self.observations.find(query, MATCH_FIELDS).sort("_id", DESCENDING).limit(limit)
        return list(cursor)

    def at_seqs(self, scope_id: ObjectId, seqs: list[int]) -> list[Observation]:
        """The observations at these places of one scope's log (the `(scope_id, seq)` index)."""
        if not seqs:
            return []
        wanted = sorted(set(seqs))
        cursor = self.observations.find({"scope_id": scope_id, "seq": {"$in": wanted}}).limit(
            len(wanted)
        )
        return [Observation.from_mongo(d) for d in cursor]

    # -- applying ------------------------------------------------------------------------

    def mark_deleted(
        self, observation_ids: list[ObjectId], *, now: datetime, session: ClientSession
    ) -> int:
        """Soft delete those not deleted yet; how many were."""
        if not observation_ids:
            return 0
        result = self.observations.bulk_write(
            [
                UpdateOne({"_id": oid, "deleted_at": None}, {"$set": {"deleted_at": now}})
                for oid in observation_ids
            ],
            ordered=False,
            session=session,
        )
        return result.modified_count

    def mark_private(self, observation_ids: list[ObjectId], *, session: ClientSession) -> int:
        if not observation_ids:
            return 0
        result = self.observations.bulk_write(
            [
                UpdateOne({"_id": oid, "private": False}, {"$set": {"private": True}})
                for oid in observation_ids
            ],
            ordered=False,
            session=session,
        )
        return result.modified_count

    def move(
        self,
        placements: list[tuple[ObjectId, int]],
        *,
        source_id: ObjectId,
        target_id: ObjectId,
        session: ClientSession,
    ) -> int:
        """Re-file observations (`(_id, new seq)`) from the source scope into the target:
        pending there, whatever they were; every other field (provenance, people, times)
        stays. Only those still in the source move."""
        if not placements:
            return 0
        result = self.observations.bulk_write(
            [
                UpdateOne(
                    {"_id": oid, "scope_id": source_id},
                    {
                        "$set": {
                            "scope_id": target_id,
                            "seq": seq,
                            "consolidated": False,
                            "restored_to_pending": False,
                        }
                    },
                )
                for oid, seq in placements
            ],
            ordered=False,
            session=session,
        )
        return result.modified_count

    def unlink_from_scope(
        self,
        scope_id: ObjectId,
        observation_ids: list[ObjectId],
        *,
        moved_out: int,
        rebuild_ids: list[ObjectId],
        session: ClientSession,
    ) -> int:
        """In the source scope: out of the pending list, `moved_out` fewer in the count, and
        `rebuild_ids` flagged for a rebuild; 1 when the pending list changed, else 0."""
        update: dict[str, Any] = {"$pull": {"pending_observation_ids": {"$in": observation_ids}}}
        if moved_out:
            update["$inc"] = {"observation_count": -moved_out}
        if rebuild_ids:
            update["$addToSet"] = {"rebuild_observation_ids": {"$each": rebuild_ids}}
        result = self.scopes.update_one({"_id": scope_id}, update, session=session)
        return result.modified_count

    def flag_rebuild(
        self, scope_id: ObjectId, observation_ids: list[ObjectId], *, session: ClientSession
    ) -> None:
        if observation_ids:
            self.scopes.update_one(
                {"_id": scope_id},
                {"$addToSet": {"rebuild_observation_ids": {"$each": observation_ids}}},
                session=session,
            )

    # -- the job's progress --------------------------------------------------------------

    def progress(self, job_id: ObjectId) -> dict[str, Any]:
        doc = self.jobs.find_one({"_id": job_id}, {"progress": 1})
        return dict((doc or {}).get("progress") or {})

    def advance(
        self,
        job_id: ObjectId,
        *,
        expected_done: int,
        done: int,
        applied: int,
        scope_ids: list[str],
        session: ClientSession,
    ) -> bool:
        """Record a batch as done, in the batch's own transaction; False when the progress
        moved on (another runner did this batch)."""
        query: dict[str, Any] = {"_id": job_id}
        query["progress.done"] = expected_done if expected_done else {"$in": [0, None]}
        update: dict[str, Any] = {
            "$set": {"progress.done": done},
            "$inc": {"progress.applied": applied},
        }
        if scope_ids:
            update["$addToSet"] = {"progress.scope_ids": {"$each": scope_ids}}
        result = self.jobs.update_one(query, update, session=session)
        return result.matched_count == 1
