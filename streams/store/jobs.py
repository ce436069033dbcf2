"""`memory_jobs`: every formation, consolidation and propagation, with status and timings."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING, InsertOne
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.documents import Job
from streams.store.indexes import IndexSpec, index
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_jobs"
INDEXES: list[IndexSpec] = [
    # Recent jobs by status (the failed list, the queue), newest first by _id.
    index(COLLECTION, "status", ("_id", -1)),
    # The active job of a scope of a kind (de-duplicates "consolidate now").
    index(COLLECTION, "scope_id", "kind", "status"),
    index(COLLECTION, "agent_id", ("_id", -1)),
    # Failed jobs per agent (the dashboard's column): only the failed ones are read.
    index(COLLECTION, "agent_id", "status"),
    # `GET /jobs?kind=`: one kind, newest first.
    index(COLLECTION, "kind", ("_id", -1)),
    # Forget-user: the jobs whose payload names the user (the chat proxy's ingest).
    index(COLLECTION, "agent_id", "payload.user_id"),
]
ACTIVE = ["queued", "running"]


class JobRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(
        self, job: Job, *, session: ClientSession | None = None, writes: WriteBatch | None = None
    ) -> None:
        """With `writes`, the insert joins the transaction's batch (sent at its flush)."""
        if writes is not None:
            writes.add(InsertOne(job.to_mongo(), namespace=self.collection.full_name))
            return
        self.collection.insert_one(job.to_mongo(), session=session)

    def get(self, job_id: ObjectId) -> Job | None:
        doc = self.collection.find_one({"_id": job_id})
        return Job.from_mongo(doc) if doc else None

    def active_for_scope(
        self,
        scope_id: ObjectId,
        kind: str,
        *,
        statuses: list[str] | None = None,
        session: ClientSession | None = None,
    ) -> Job | None:
        doc = self.collection.find_one(
            {"scope_id": scope_id, "kind": kind, "status": {"$in": statuses or ACTIVE}},
            session=session,
        )
        return Job.from_mongo(doc) if doc else None

    def start(self, job_id: ObjectId, *, now: datetime, stale_before: datetime) -> bool:
        """queued/failed (or running without a heartbeat since `stale_before`: its worker
        died) → running.

        False when the job is finished or running elsewhere.
        """
        update = {
            "$set": {"status": "running", "started_at": now, "heartbeat_at": now, "error": None},
            "$inc": {"attempts": 1},
        }
        for claim in (
            {"_id": job_id, "status": {"$in": ["queued", "failed"]}},
            {"_id": job_id, "status": "running", "heartbeat_at": {"$lt": stale_before}},
            {
                "_id": job_id,
                "status": "running",
                "heartbeat_at": {"$exists": False},
                "started_at": {"$lt": stale_before},
            },
        ):
            if self.collection.update_one(claim, update).matched_count == 1:
                return True
        return False

    def renew(self, job_id: ObjectId, *, now: datetime) -> bool:
        """A running job's heartbeat (its lease): False once it is no longer running."""
        result = self.collection.update_one(
            {"_id": job_id, "status": "running"}, {"$set": {"heartbeat_at": now}}
        )
        return result.matched_count == 1

    def last_beat(self, job_id: ObjectId) -> tuple[str, datetime | None] | None:
        """(status, last heartbeat, else start) of a job; None when there is no such job."""
        doc = self.collection.find_one(
            {"_id": job_id}, {"status": 1, "heartbeat_at": 1, "started_at": 1, "_id": 0}
        )
        if doc is None:
            return None
        return doc["status"], doc.get("heartbeat_at") or doc.get("started_at")

    def stale_running(self, *, stale_before: datetime, limit: int) -> list[Job]:
        """Running jobs whose worker stopped renewing their lease (it died)."""
        found = []
        for query in (
            {"status": "running", "heartbeat_at": {"$lt": stale_before}},
            {
                "status": "running",
                "heartbeat_at": {"$exists": False},
                "started_at": {"$lt": stale_before},
            },
        ):
            cursor = self.collection.find(query).sort("_id", DESCENDING).limit(limit)
            found += [Job.from_mongo(d) for d in cursor]
        return found[:limit]

    def finish(
        self,
        job_id: ObjectId,
        *,
        status: str,
        now: datetime,
        result: dict[str, Any] | None = None,
        error: str | None = None,
        llm_calls: int = 0,
    ) -> None:
        self.collection.update_one(
            {"_id": job_id},
            {
                "$set": {
                    "status": status,
                    "finished_at": now,
                    "result": result or {},
                    "error": error,
                },
                "$inc": {"llm_calls": llm_calls},
            },
        )

    def claim_undo(
        self, job_id: ObjectId, undo_job_id: ObjectId, *, session: ClientSession | None = None
    ) -> bool:
        """Mark a finished bulk job as undone by `undo_job_id`; False when it was already
        (of two undos exactly one claims it)."""
        result = self.collection.update_one(
            {"_id": job_id, "kind": "bulk", "undo_job_id": None},
            {"$set": {"undo_job_id": undo_job_id}},
            session=session,
        )
        return result.modified_count == 1

    def undo_job_of(self, job_id: ObjectId) -> str | None:
        """The job that undid this bulk job, if one did."""
        doc = self.collection.find_one({"_id": job_id}, {"undo_job_id": 1})
        found = (doc or {}).get("undo_job_id")
        return str(found) if found is not None else None

    def unset_payload(self, job_id: ObjectId, key: str) -> None:
        """Drop one payload field (e.g. message text a finished job no longer needs)."""
        self.collection.update_one({"_id": job_id}, {"$unset": {f"payload.{key}": ""}})

    def forget_user(self, *, agent_id: str, user_id: str, keep: ObjectId) -> dict[str, int]:
        """Jobs whose payload names the user, but forget jobs (`keep`, and earlier ones:
        their receipts name the user by id only): finished ones are deleted, waiting or
        running ones keep only ids (no name, no message text, no result), so no copy of
        what they said stays."""
        query = {
            "agent_id": agent_id,
            "payload.user_id": user_id,
            "_id": {"$ne": keep},
            "kind": {"$ne": "forget_user"},  # receipts: ids and counts only
        }
        deleted = self.collection.delete_many({**query, "status": {"$nin": ACTIVE}}).deleted_count
        reduced = self.collection.update_many(
            {**query, "status": {"$in": ACTIVE}},
            {
                "$unset": {
                    "payload.user_name": "",
                    "payload.messages": "",
                    "payload.groups": "",
                    "result": "",
                }
            },
        ).modified_count
        return {"deleted": deleted, "reduced": reduced}

    def wait_for(
        self, job_id: ObjectId, before_id: str, *, session: ClientSession | None = None
    ) -> bool:
        """A queued job also waits for `before_id` (`payload.after`); False once it left
        the queue (a running one may have read what the new job changes)."""
        result = self.collection.update_one(
            {"_id": job_id, "status": "queued"},
            {"$addToSet": {"payload.after": before_id}},
            session=session,
        )
        return result.matched_count == 1

    def requeue(self, job_id: ObjectId, *, session: ClientSession | None = None) -> bool:
        result = self.collection.update_one(
            {"_id": job_id, "status": "failed"}, {"$set": {"status": "queued"}}, session=session
        )
        return result.matched_count == 1

    def page(
        self,
        *,
        status: str | None,
        agent_id: str | None,
        before: ObjectId | None,
        limit: int,
        kind: str | None = None,
        agent_ids: list[str] | None = None,
    ) -> list[Job]:
        """Newest first; `agent_ids` limits the page to these agents (an agent key's)."""
        query: dict[str, Any] = {}
        if status:
            query["status"] = status
        elif agent_id or agent_ids is not None:
            pass
        elif kind:
            query["kind"] = kind
        else:
            query["status"] = {"$in": ["queued", "running", "succeeded", "failed"]}
        if agent_id:
            query["agent_id"] = agent_id
        elif agent_ids is not None:
            query["agent_id"] = {"$in": agent_ids}
        if kind:
            query["kind"] = kind
        if before is not None:
            query["_id"] = {"$lt": before}
        cursor = self.collection.find(query).sort("_id", DESCENDING).limit(limit)
        return [Job.from_mongo(d) for d in cursor]

    def failed_counts(self, agent_ids: list[str]) -> dict[str, int]:
        """How many failed jobs each of these agents has (absent: none)."""
        if not agent_ids:
            return {}
        pipeline = [
            {"$match": {"agent_id": {"$in": agent_ids}, "status": "failed"}},
            {"$group": {"_id": "$agent_id", "n": {"$sum": 1}}},
        ]
        return {d["_id"]: d["n"] for d in self.collection.aggregate(pipeline)}
