"""`memory_observations`, the queries of two states an observation passes through:
held for review (the queue, its counts, a decision) and expiring (the sweep's to-do,
its claim, the purge). `ObservationRepository` takes them in; they are apart only to
keep that module readable, with the indexes they need beside them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo.client_session import ClientSession
from pymongo.collection import Collection

from streams.core.documents import Observation
from streams.core.screened import require_screened
from streams.store.indexes import IndexSpec, index
from streams.store.scopes import bump_log_rev

COLLECTION = "memory_observations"
INDEXES: list[IndexSpec] = [
    # The review queue: an agent's held observations, oldest first (`_id` order) ...
    index(COLLECTION, "agent_id", "review_status", "_id"),
    # ... and one scope's (the scope page, open collective candidates).
    index(COLLECTION, "scope_id", "review_status", "_id"),
    # Decided items, newest decision first (the Review page's "Decided" list, undo).
    index(COLLECTION, "agent_id", "review.decided_at", "_id"),
    # Lifecycle: the expiry sweep's to-do (`expiry_due`, unset once handled) and its purge
    # (`expires_at`); sparse, so they hold only the observations that expire.
    IndexSpec(
        collection=COLLECTION,
        keys=(("expiry_due", 1),),
        name="expiry_due",
        options={"sparse": True},
    ),
    IndexSpec(
        collection=COLLECTION,
        keys=(("expires_at", 1),),
        name="expires_at",
        options={"sparse": True},
    ),
    # Held edits of one observation (`review.edit_of`): withdrawn when it is deleted.
    IndexSpec(
        collection=COLLECTION,
        keys=(("review.edit_of", 1),),
        name="review_edit_of",
        options={"sparse": True},
    ),
]


def withdraw_held_edits(
    collection: Collection,
    scopes: Collection,
    *,
    scope_id: ObjectId,
    observation_ids: list[ObjectId],
    now: datetime,
    session: ClientSession | None,
) -> int:
    """Delete the held edits (`review.edit_of`) of observations being deleted, in the
    delete's transaction: a proposal to change a text that is gone is gone with it, so
    no page lists it (nor the deleted text its provenance quotes). Every delete of an
    observation (`mark_deleted`, one or in bulk) calls this; how many it withdrew."""
    if not observation_ids:
        return 0
    result = collection.update_many(
        {"review.edit_of": {"$in": [str(o) for o in observation_ids]}, "deleted_at": None},
        {
            "$set": {
                "deleted_at": now,
                "deleted_by": "withdrawn: the observation it would edit was deleted",
                "review_status": "rejected",
                "review.decision": "withdrawn",
                "review.decided_at": now,
            },
            "$unset": {"text_key": ""},
        },
        session=session,
    )
    if result.modified_count:
        scopes.update_one(
            {"_id": scope_id},
            {"$inc": {"observation_count": -result.modified_count, "log_rev": 1}},
            session=session,
        )
    return result.modified_count


def log_changed_by(fields: dict[str, Any], scope_id: ObjectId | None) -> ObjectId | None:
    """The scope whose log revision `$set`ting `fields` moves (`bump_log_rev`), or None:
    a change of a stored observation's text or liveness requires the scope's id."""
    if "content" not in fields and "deleted_at" not in fields:
        return None
    if scope_id is None:
        raise ValueError("a change of text or liveness needs the scope's id")
    return scope_id


class ReviewQueries:
    """Held observations: the review queue, its counts, and a person's decision."""

    collection: Collection
    scopes: Collection

    def review_page(
        self,
        *,
        agent_id: str | list[str],
        status: str,
        scope_id: ObjectId | None,
        reason: str | None,
        after: ObjectId | None,
        limit: int,
    ) -> list[Observation]:
        """Held observations of an agent, of several ("all agents": one index range each,
        merged in `_id` order) or of one scope, oldest first."""
        query: dict[str, Any] = {"review_status": status, "deleted_at": None}
        agents: Any = agent_id if isinstance(agent_id, str) else {"$in": list(agent_id)}
        if scope_id is not None:
            query = {"scope_id": scope_id, "agent_id": agents, **query}
        else:
            query = {"agent_id": agents, **query}
        if reason:
            query["review.reasons"] = reason
        if after is not None:
            query["_id"] = {"$gt": after}
        cursor = self.collection.find(query).sort("_id", 1).limit(limit)
        return [Observation.from_mongo(d) for d in cursor]

    def decided_page(
        self,
        *,
        agent_ids: list[str],
        before: tuple[datetime, ObjectId] | None,
        limit: int,
    ) -> list[Observation]:
        """Observations a person decided (and nobody undid), newest decision first; with
        several agents one indexed range per agent ("all agents"), merged."""
        base: dict[str, Any] = {
            "agent_id": agent_ids[0] if len(agent_ids) == 1 else {"$in": agent_ids},
            "deleted_at": None,
        }
        found: list[dict[str, Any]] = []
        ranges: list[dict[str, Any]]
        if before is None:
            ranges = [{"review.decided_at": {"$type": "date"}}]
        else:
            # The rest of the cursor's moment (a bulk decision shares one time), then what
            # came before it: two index ranges (a top-level $or would scan).
            at, oid = before
            ranges = [
                {"review.decided_at": at, "_id": {"$lt": oid}},
                {"review.decided_at": {"$lt": at, "$type": "date"}},
            ]
        for bounds in ranges:
            if len(found) >= limit:
                break
            cursor = (
                self.collection.find({**base, **bounds})
                .sort([("review.decided_at", -1), ("_id", -1)])
                .limit(limit - len(found))
            )
            found.extend(cursor)
        return [Observation.from_mongo(d) for d in found]

    def undo_decision(
        self,
        observation_id: ObjectId,
        *,
        current: str | None,
        decided_at: datetime,
        fields: dict[str, Any],
        session: ClientSession | None = None,
    ) -> bool:
        """Put a decided observation back (`fields`), only while it is still as that
        decision left it (`current` status, the same `decided_at`, unconsolidated, not
        deleted): of two undos, or an undo and a consolidation, one wins."""
        require_screened(fields.get("content"), what="observation content")
        result = self.collection.update_one(
            {
                "_id": observation_id,
                "review_status": current,
                "review.decided_at": decided_at,
                "deleted_at": None,
                "consolidated": False,
            },
            {"$set": fields},
            session=session,
        )
        return result.matched_count == 1

    def review_counts(
        self, *, statuses: list[str], agent_id: str | None = None, scope_id: ObjectId | None = None
    ) -> dict[str, int]:
        """How many wait in each status, per agent or per scope (one of them), in one read."""
        match: dict[str, Any] = (
            {"scope_id": scope_id} if scope_id is not None else {"agent_id": agent_id}
        )
        match.update(review_status={"$in": statuses}, deleted_at=None)
        pipeline = [{"$match": match}, {"$group": {"_id": "$review_status", "n": {"$sum": 1}}}]
        found = {d["_id"]: d["n"] for d in self.collection.aggregate(pipeline)}
        return {status: found.get(status, 0) for status in statuses}

    def review_counts_by_agent(self, agent_ids: list[str], *, status: str) -> dict[str, int]:
        """How many wait in `status` for each of these agents (absent: none), in one read."""
        if not agent_ids:
            return {}
        pipeline: list[dict[str, Any]] = [
            {
                "$match": {
                    "agent_id": {"$in": agent_ids},
                    "review_status": status,
                    "deleted_at": None,
                }
            },
            {"$group": {"_id": "$agent_id", "n": {"$sum": 1}}},
        ]
        return {d["_id"]: d["n"] for d in self.collection.aggregate(pipeline)}

    def set_review_status(
        self,
        observation_id: ObjectId,
        *,
        expected: str,
        fields: dict[str, Any],
        scope_id: ObjectId | None = None,
        session: ClientSession | None = None,
    ) -> bool:
        """Change a held observation, only while it is still `expected` and not deleted:
        of two deciders, the second misses (False). An approval that edits the text
        moves the scope's log revision (`scope_id` required then: `log_changed_by`)."""
        require_screened(fields.get("content"), what="observation content")
        changed_log = log_changed_by(fields, scope_id)
        result = self.collection.update_one(
            {"_id": observation_id, "review_status": expected, "deleted_at": None},
            {"$set": fields},
            session=session,
        )
        if changed_log is not None and result.matched_count:
            bump_log_rev(self.scopes, changed_log, session=session)
        return result.matched_count == 1

    def push_supporting_group(
        self, observation_id: ObjectId, group_id: str, *, session: ClientSession | None = None
    ) -> bool:
        """Add a group to an open candidate's supporters (once)."""
        result = self.collection.update_one(
            {"_id": observation_id, "review_status": "candidate", "deleted_at": None},
            {"$addToSet": {"review.supporting_group_ids": group_id}},
            session=session,
        )
        return result.matched_count == 1

    def hold_for_review(
        self,
        observation_id: ObjectId,
        *,
        reason: str,
        now: datetime,
        session: ClientSession | None = None,
    ) -> bool:
        """Send a pending, unconsolidated observation to review (`in_review`, `reason`);
        False when it is not pending any more."""
        result = self.collection.update_one(
            {
                "_id": observation_id,
                "review_status": None,
                "deleted_at": None,
                "consolidated": False,
            },
            {
                "$set": {
                    "review_status": "in_review",
                    "review": {"reasons": [reason], "since": now, "supporting_group_ids": []},
                }
            },
            session=session,
        )
        return result.matched_count == 1


class ExpiryQueries:
    """Observations that expire: their expiry, the sweep's to-do, its claim, the purge."""

    collection: Collection

    def set_expiry(
        self,
        observation_id: ObjectId,
        expires_at: datetime | None,
        *,
        session: ClientSession | None = None,
    ) -> bool:
        """Set or clear an observation's expiry, unless the sweep handled it already
        (False then, or when it is gone)."""
        change: dict[str, Any] = (
            {"$set": {"expires_at": expires_at, "expiry_due": expires_at}}
            if expires_at is not None
            else {"$unset": {"expires_at": "", "expiry_due": ""}}
        )
        result = self.collection.update_one(
            {"_id": observation_id, "deleted_at": None}, change, session=session
        )
        return result.matched_count == 1

    def expiry_due(self, now: datetime, *, limit: int) -> list[Observation]:
        """Observations expired by `now` that the sweep has not handled yet (oldest first)."""
        cursor = (
            self.collection.find({"expiry_due": {"$lte": now}}).sort("expiry_due", 1).limit(limit)
        )
        return [Observation.from_mongo(d) for d in cursor]

    def expiry_claim(self, observation_id: ObjectId, *, session: ClientSession | None) -> bool:
        """Mark one expired observation handled (once: False if another sweep did): it
        leaves the dedup key, so the same fact may be told again."""
        result = self.collection.update_one(
            {"_id": observation_id, "expiry_due": {"$exists": True}},
            {"$unset": {"expiry_due": "", "text_key": ""}},
            session=session,
        )
        return result.matched_count == 1

    def expired_before(self, cutoff: datetime, *, limit: int) -> list[Observation]:
        """Observations that expired before `cutoff` (to purge; handled ones only)."""
        cursor = self.collection.find({"expires_at": {"$lte": cutoff}}).limit(limit)
        return [o for o in map(Observation.from_mongo, cursor) if o.expiry_swept]
