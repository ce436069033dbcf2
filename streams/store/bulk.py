"""The queries of bulk actions by filter (`streams.memory.bulk`), on `memory_observations` and jobs.

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

from streams.core.documents import Observation
from streams.core.screened import require_screened
from streams.store import observations, scope_lists, scopes
from streams.store.indexes import IndexSpec, index
from streams.store.lookups import find_in_parts
from streams.store.observation_states import withdraw_held_edits

INDEXES: list[IndexSpec] = [
    # Bulk by session: one session's observations across the agent's scopes, newest first.
    index(observations.COLLECTION, "agent_id", "source_session_id", "_id"),
]
MATCH_FIELDS = {"_id": 1, "scope_id": 1, "seq": 1}
# One document per bulk job (`_id`: the job's): how many entries are done, how many of
# them changed something, and the scopes that need a rebuild.
PROGRESS = "memory_bulk_progress"


class BulkRepository:
    def __init__(self, db: Database) -> None:
        self.observations = db[observations.COLLECTION]
        self.scopes = db[scopes.COLLECTION]
        self.progress_docs = db[PROGRESS]

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

    def scope_count(self, scope_id: ObjectId, *, extra: dict[str, Any]) -> int:
        """How many of the scope's observations match `extra` (the `(scope_id, seq)` index
        leads; the report of unused memory counts one scope at a time)."""
        return self.observations.count_documents({"scope_id": scope_id, **extra})

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

    def absorbed_among(
        self, observation_ids: list[ObjectId], *, session: ClientSession
    ) -> list[ObjectId]:
        """Those of these a consolidation absorbed (or a restore put back to pending), as
        the caller's transaction reads them."""
        fields = {"consolidated": 1, "restored_to_pending": 1}
        docs = find_in_parts(
            self.observations, "_id", observation_ids, projection=fields, session=session
        )
        found = {d["_id"] for d in docs if d.get("consolidated") or d.get("restored_to_pending")}
        return [oid for oid in observation_ids if oid in found]

    def mark_deleted(
        self,
        scope_id: ObjectId,
        observation_ids: list[ObjectId],
        *,
        now: datetime,
        session: ClientSession,
    ) -> int:
        """Soft delete those of the scope not deleted yet; how many were (the scope's log
        revision moves when any was: `scopes.bump_log_rev`)."""
        if not observation_ids:
            return 0
        result = self.observations.bulk_write(
            [
                # `text_key` is held by live observations only (as a single delete): left
                # on, a later add of the same text found the deleted one as its duplicate.
                UpdateOne(
                    {"_id": oid, "deleted_at": None},
                    {"$set": {"deleted_at": now}, "$unset": {"text_key": ""}},
                )
                for oid in observation_ids
            ],
            ordered=False,
            session=session,
        )
        if result.modified_count:
            scopes.bump_log_rev(self.scopes, scope_id, session=session)
            withdraw_held_edits(
                self.observations,
                self.scopes,
                scope_id=scope_id,
                observation_ids=observation_ids,
                now=now,
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

    def release_text_keys(self, observation_ids: list[ObjectId], *, session: ClientSession) -> None:
        """Deleted observations give up their `text_key` (a bulk delete before it did so
        kept it, and the dedup of a restore would find them)."""
        if observation_ids:
            self.observations.bulk_write(
                [
                    UpdateOne(
                        {"_id": oid, "deleted_at": {"$ne": None}}, {"$unset": {"text_key": ""}}
                    )
                    for oid in observation_ids
                ],
                ordered=False,
                session=session,
            )

    def mark_public(self, observation_ids: list[ObjectId], *, session: ClientSession) -> int:
        """A bulk mark-private taken back: those still private are public again."""
        if not observation_ids:
            return 0
        result = self.observations.bulk_write(
            [
                UpdateOne({"_id": oid, "private": True}, {"$set": {"private": False}})
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
        screened: list[Observation],
        source_id: ObjectId,
        target_id: ObjectId,
        session: ClientSession,
    ) -> int:
        """Re-file observations (`(_id, new seq)`) from the source scope into the target,
        as the target's screen filed them (`screened`, in the same order: content, flags,
        review status); every other field (provenance, people, times) stays. Only those
        still in the source move."""
        if not placements:
            return 0
        for o in screened:
            require_screened(o.content, what="observation content")
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
                            "content": o.content,
                            "flags": o.flags,
                            "flag_spans": o.flag_spans,
                            "review_status": o.review_status,
                            "review": o.review,
                            "text_key": o.text_key,
                            "origin": "move",
                        }
                    },
                )
                for (oid, seq), o in zip(placements, screened, strict=True)
            ],
            ordered=False,
            session=session,
        )
        if result.modified_count:  # they left the source's log
            scopes.bump_log_rev(self.scopes, source_id, session=session)
        return result.modified_count

    def unlink_from_scope(
        self,
        scope_id: ObjectId,
        *,
        pending_after: list[ObjectId] | None,
        moved_out: int,
        rebuild_after: list[ObjectId] | None,
        session: ClientSession,
    ) -> None:
        """In the source scope: the pending list without the batch and the rebuild list
        with the batch's consolidated ones (each `None`: as it is), and `moved_out` fewer
        in the count.

        The lists are set whole, from the scope as the transaction read it, not `$pull`ed
        or `$addToSet`: the embedded store's `$pull` with an `$in` of 200 over a list of
        thousands took ~2.5 s. Inside the batch's snapshot transaction a concurrent
        change of the scope is a write conflict (the batch is retried), so nothing added
        meanwhile is lost."""
        fields: dict[str, Any] = {}
        if pending_after is not None:
            fields["pending_observation_ids"] = pending_after
        if rebuild_after is not None:
            fields["rebuild_observation_ids"] = rebuild_after
        update: dict[str, Any] = {"$set": fields} if fields else {}
        if moved_out:
            update["$inc"] = {"observation_count": -moved_out}
        if update:
            self.scopes.update_one({"_id": scope_id}, update, session=session)

    def flag_rebuild(
        self, scope_id: ObjectId, observation_ids: list[ObjectId], *, session: ClientSession
    ) -> None:
        scope_lists.add_to_list(
            self.scopes, scope_id, "rebuild_observation_ids", observation_ids, session=session
        )

    # -- the job's progress --------------------------------------------------------------

    def progress(self, job_id: ObjectId) -> dict[str, Any]:
        return dict(self.progress_docs.find_one({"_id": job_id}) or {})

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
        moved on (another runner did this batch). Its own document, not the job's: the
        job's heartbeat writes there while a batch runs, and would conflict with it."""
        update: dict[str, Any] = {
            "$set": {"done": done},
            "$inc": {"applied": applied},
        }
        if scope_ids:
            update["$addToSet"] = {"scope_ids": {"$each": scope_ids}}
        if expected_done == 0:
            # The first batch creates the document; a second runner's insert collides.
            if self.progress_docs.find_one({"_id": job_id}, session=session) is not None:
                return False
            self.progress_docs.insert_one(
                {"_id": job_id, "done": done, "applied": applied, "scope_ids": scope_ids},
                session=session,
            )
            return True
        result = self.progress_docs.update_one(
            {"_id": job_id, "done": expected_done}, update, session=session
        )
        return result.matched_count == 1
