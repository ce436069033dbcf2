"""`memory_observations`: the log of each scope, paged by the scope's sequence number.

Long because: the observation repository owns every query of the largest collection, and each
query sits beside the index it uses.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from bson import ObjectId
from pymongo import InsertOne, ReturnDocument
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import BulkWriteError, DuplicateKeyError

from streams.core.documents import Observation
from streams.core.exceptions import Conflict
from streams.core.screened import require_screened
from streams.store import access_log, observation_states, observation_supersession
from streams.store.indexes import IndexSpec, RetiredIndex, index
from streams.store.lookups import find_in_parts
from streams.store.paging import page_by_seq
from streams.store.scopes import COLLECTION as SCOPES
from streams.store.scopes import bump_log_rev
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_observations"
INDEXES: list[IndexSpec] = [
    # A scope's log, newest first, paged by a window on `seq` (filters ride inside the window).
    index(COLLECTION, "scope_id", "seq", unique=True),
    # Copies made by propagation, found from their source; sparse: only copies hold the
    # field (every other add wrote a null entry).
    IndexSpec(
        collection=COLLECTION,
        keys=(("propagated_from", 1),),
        name="propagated_from_sparse",
        options={"sparse": True},
    ),
    # One live observation per fact and scope (`streams.search.dedup`): the key (scope + digest)
    # is set on live observations only (a delete unsets it) and the index is sparse, so it
    # holds only those. Sparse rather than a `partialFilterExpression`: the embedded store
    # never serves a query from a partial index (a lookup scanned: 80 ms at 5,000
    # documents, against 0.9 ms from the sparse one).
    IndexSpec(
        collection=COLLECTION,
        keys=(("text_key", 1),),
        unique=True,
        name="text_key_live",
        options={"sparse": True},
    ),
    *observation_states.INDEXES,
    *observation_supersession.INDEXES,
]

RETIRED_INDEXES = (
    RetiredIndex(
        COLLECTION,
        "agent_id_1_related_user_ids_1",
        "a prefix of `streams.store.privacy`'s (agent_id, related_user_ids, _id), which serves "
        "every query it served (user audit, forget user)",
    ),
    RetiredIndex(COLLECTION, "propagated_from_1", "replaced by the sparse propagated_from_sparse"),
)

FEEDBACK_CALLS = 50  # the context calls whose feedback an observation remembers (repeats)
StatusFilter = Literal["pending", "consolidated", "in_review", "candidate", "rejected", "all"]
HELD_STATUSES = ("in_review", "candidate", "rejected")


class TextTaken(Conflict):
    """A write met the unique `text_key` index: the scope holds this fact already."""


def _is_duplicate_key(exc: BulkWriteError | DuplicateKeyError) -> bool:
    if isinstance(exc, DuplicateKeyError):
        return True
    errors = (exc.details or {}).get("writeErrors") or []
    return any(e.get("code") == 11000 for e in errors)


# Ids per `$in` of a write over many observations (`mark_consolidated`).
MARK_BATCH = 200


class ObservationRepository(
    observation_states.ReviewQueries,
    observation_states.ExpiryQueries,
    observation_supersession.SupersessionQueries,
):
    def __init__(self, db: Database, *, access_flush_seconds: float = 0.0) -> None:
        self.collection = db[COLLECTION]
        self.scopes = db[SCOPES]
        self.access_flush_seconds = access_flush_seconds

    def insert_many(
        self,
        observations: list[Observation],
        *,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None:
        if not observations:
            return
        for o in observations:
            require_screened(o.content, what="observation content")
        if writes is not None:
            for o in observations:
                writes.add(InsertOne(o.to_mongo(), namespace=self.collection.full_name))
            return
        try:
            self.collection.insert_many([o.to_mongo() for o in observations], session=session)
        except (BulkWriteError, DuplicateKeyError) as exc:
            if _is_duplicate_key(exc):
                raise TextTaken("the scope holds this text already") from exc
            raise

    def live_by_text_key(
        self, keys: list[str], *, session: ClientSession | None = None
    ) -> dict[str, Observation]:
        """The live observations holding these text keys, by key (one query, by the unique
        `text_key` index: at most one document per key)."""
        if not keys:
            return {}
        wanted = sorted(set(keys))
        cursor = self.collection.find(
            {"text_key": {"$in": wanted}}, limit=len(wanted), session=session
        )
        return {d["text_key"]: Observation.from_mongo(d) for d in cursor}

    def live_texts_between(
        self,
        scope_id: ObjectId,
        *,
        low_seq: int,
        high_seq: int,
        session: ClientSession | None = None,
    ) -> list[tuple[int, str, str]]:
        """(seq, id, content) of a scope's live observations with `low_seq < seq <= high_seq`,
        newest first: an add's window (`streams.memory.window`), content only (no vectors)."""
        if high_seq <= low_seq:
            return []
        cursor = self.collection.find(
            {"scope_id": scope_id, "seq": {"$gt": low_seq, "$lte": high_seq}},
            {"content": 1, "deleted_at": 1, "seq": 1, "superseded_by": 1},
            limit=high_seq - low_seq,
            session=session,
        )
        docs = sorted(cursor, key=lambda d: -d.get("seq", 0))
        return [
            (d["seq"], str(d["_id"]), d["content"])
            for d in docs
            if d.get("deleted_at") is None and d.get("superseded_by") is None
        ]

    def get(
        self, observation_id: ObjectId, *, session: ClientSession | None = None
    ) -> Observation | None:
        doc = self.collection.find_one({"_id": observation_id}, session=session)
        return Observation.from_mongo(doc) if doc else None

    def get_many(self, observation_ids: list[ObjectId]) -> list[Observation]:
        """By id, in the order asked (missing ids are left out). Long lists are read in
        parts (`find_in_parts`): one `$in` of 10,000 ids costs 10,000 x 10,000 comparisons
        on the embedded store."""
        if not observation_ids:
            return []
        by_id = {d["_id"]: d for d in find_in_parts(self.collection, "_id", observation_ids)}
        return [Observation.from_mongo(by_id[i]) for i in observation_ids if i in by_id]

    def deleted_among(
        self, observation_ids: list[ObjectId], *, session: ClientSession | None = None
    ) -> list[ObjectId]:
        """Those of these observations deleted (or gone): read in the caller's
        transaction, a delete that commits after its snapshot is a write conflict there
        once the transaction writes them (a consolidation marks them consolidated)."""
        docs = find_in_parts(
            self.collection, "_id", observation_ids, projection={"deleted_at": 1}, session=session
        )
        live = {d["_id"] for d in docs if d.get("deleted_at") is None}
        return [i for i in observation_ids if i not in live]

    def page(
        self,
        *,
        scope_id: ObjectId,
        top_seq: int,
        before: int | None,
        limit: int,
        status: StatusFilter = "all",
        include_deleted: bool = False,
        private: bool | None = None,
        text: str | None = None,
        include_superseded: bool = True,
        unused_since: datetime | None = None,
    ) -> tuple[list[Observation], int | None]:
        """A page of the scope's log, newest first; filters (the text one included, a
        case-insensitive match on content) ride inside the bounded `seq` windows.
        `unused_since`: only those created before it and not retrieved since (never, or
        last before it; `$not` keeps it one condition, a top-level `$or` is a scan)."""
        base: dict[str, Any] = {"scope_id": scope_id}
        if status in HELD_STATUSES:
            base["review_status"] = status
        elif status != "all":
            base["consolidated"] = status == "consolidated"
            base["review_status"] = None
        if not include_deleted:
            base["deleted_at"] = None
        if private is not None:
            base["private"] = private
        if not include_superseded:
            base["superseded_by"] = None
        if text:
            base["content"] = re.compile(re.escape(text), re.IGNORECASE)
        if unused_since is not None:
            base["created_at"] = {"$lt": unused_since}
            base["last_accessed_at"] = {"$not": {"$gte": unused_since}}
        page = page_by_seq(
            self.collection, base_filter=base, top_seq=top_seq, before=before, limit=limit
        )
        return [Observation.from_mongo(d) for d in page.docs], page.next_before

    def mark_consolidated(
        self,
        observation_ids: list[ObjectId],
        *,
        value: bool = True,
        session: ClientSession | None = None,
    ) -> None:
        """Absorbed (True), or back to pending after a restore (False).

        In `MARK_BATCH`es: the embedded store's cost of one `$in` grows with its square
        (measured: 100 ids 37 ms, 400 ids 770 ms, 5,000 ids 124 s, past its transaction
        lifetime), so a chunked consolidation of 5,000 commits in seconds, not never."""
        fields: dict[str, Any] = {"consolidated": value}
        if not value:
            fields["restored_to_pending"] = True
        for low in range(0, len(observation_ids), MARK_BATCH):
            self.collection.update_many(
                {"_id": {"$in": observation_ids[low : low + MARK_BATCH]}},
                {"$set": fields},
                session=session,
            )

    def update_fields(
        self,
        observation_id: ObjectId,
        fields: dict[str, Any],
        *,
        scope_id: ObjectId | None = None,
        session: ClientSession | None = None,
    ) -> bool:
        """`$set` fields of one observation. A new `content` or `deleted_at` changes its
        scope's log: `scope_id` is then required, and its revision moves (`bump_log_rev`)."""
        require_screened(fields.get("content"), what="observation content")
        changed_log = observation_states.log_changed_by(fields, scope_id)
        try:
            result = self.collection.update_one(
                {"_id": observation_id}, {"$set": fields}, session=session
            )
        except DuplicateKeyError as exc:
            raise TextTaken("the scope holds this text already") from exc
        if changed_log is not None and result.matched_count:
            bump_log_rev(self.scopes, changed_log, session=session)
        return result.matched_count == 1

    def mark_deleted(
        self,
        observation_id: ObjectId,
        *,
        scope_id: ObjectId,
        now: datetime,
        by: str | None = None,
        session: ClientSession | None = None,
    ) -> Observation | None:
        """Soft delete, once: the observation as the delete found it, None when it was
        deleted already (or is gone). What the delete taints is decided on that state, not
        on what its caller read earlier: a run may have absorbed it in between. The scope's
        log revision moves with it (`bump_log_rev`); `by` is who deleted it (shown where
        the observation is shown as removed)."""
        before = self.collection.find_one_and_update(
            {"_id": observation_id, "deleted_at": None},
            {"$set": {"deleted_at": now, "deleted_by": by}, "$unset": {"text_key": ""}},
            return_document=ReturnDocument.BEFORE,
            session=session,
        )
        if before is not None:
            bump_log_rev(self.scopes, scope_id, session=session)
            observation_states.withdraw_held_edits(
                self.collection,
                self.scopes,
                scope_id=scope_id,
                observation_ids=[observation_id],
                now=now,
                session=session,
            )
        return Observation.from_mongo(before) if before is not None else None

    def copies_of(
        self, origin_ids: list[ObjectId], *, session: ClientSession | None = None
    ) -> set[tuple[str, str]]:
        """(scope id, source id) of the propagated copies that exist for these sources."""
        if not origin_ids:
            return set()
        cursor = self.collection.find(
            {"propagated_from": {"$in": origin_ids}},
            {"scope_id": 1, "propagated_from": 1},
            session=session,
        ).limit(len(origin_ids) * 20)
        return {(str(d["scope_id"]), str(d["propagated_from"])) for d in cursor}

    def record_access(self, observation_ids: list[ObjectId], *, now: datetime) -> None:
        """Count an access of each observation a context call retrieved.

        Never awaited: with `access_flush_seconds` the accesses join the process's
        `access_log` and are written, summed per observation, within that many seconds;
        at 0, one unacknowledged (`w=0`) bulk write now. One `update_one` by `_id` per
        observation rather than an `update_many` over an `_id` list: the embedded store
        served the latter by a scan that grew with the collection (7 ms at 1,000
        observations, 50 ms at 100,000).
        """
        if not observation_ids:
            return
        if self.access_flush_seconds > 0:
            access_log.add(self.collection, observation_ids, now, self.access_flush_seconds)
        else:
            access_log.write_accesses(
                self.collection, {oid: (1, now) for oid in dict.fromkeys(observation_ids)}
            )

    def get_many_observed(
        self,
        observation_ids: list[ObjectId],
        *,
        observed_after: datetime | None = None,
        observed_before: datetime | None = None,
    ) -> list[Observation]:
        """By id, in the order asked, only those observed in `[after, before)` (served by
        `_id`: the window narrows a known list of ids, it never scans a scope)."""
        if not observation_ids:
            return []
        query: dict[str, Any] = {"_id": {"$in": observation_ids}}
        window: dict[str, datetime] = {}
        if observed_after is not None:
            window["$gte"] = observed_after
        if observed_before is not None:
            window["$lt"] = observed_before
        if window:
            query["observed_at"] = window
        by_id = {d["_id"]: d for d in self.collection.find(query)}
        return [Observation.from_mongo(by_id[i]) for i in observation_ids if i in by_id]

    def neighbours(self, scope_id: ObjectId, seqs: list[int]) -> list[Observation]:
        """Observations at these places of one scope's log (session neighbours for search),
        by equality on `scope_id` and `$in` on `seq`: the `(scope_id, seq)` index. (With
        `scope_id: {$in}` the embedded store scans instead: 155 ms against 14 ms.)"""
        if not seqs:
            return []
        wanted = sorted(set(seqs))
        cursor = self.collection.find(
            {"scope_id": scope_id, "seq": {"$in": wanted}}, limit=len(wanted)
        )
        return [Observation.from_mongo(d) for d in cursor]

    def seq_window(
        self,
        scope_id: ObjectId,
        *,
        low_seq: int,
        high_seq: int,
        session: ClientSession | None = None,
    ) -> list[Observation]:
        """A scope's observations with `low_seq < seq <= high_seq`, oldest first (a bounded
        window on the `(scope_id, seq)` index, for walking a whole log in batches)."""
        if high_seq <= low_seq:
            return []
        cursor = (
            self.collection.find(
                {"scope_id": scope_id, "seq": {"$gt": low_seq, "$lte": high_seq}}, session=session
            )
            .sort("seq", 1)
            .limit(high_seq - low_seq)
        )
        return [Observation.from_mongo(d) for d in cursor]

    # -- lifecycle ------------------------------------------------------------------------

    def add_feedback(
        self,
        observation_id: ObjectId,
        *,
        useful: bool,
        call_id: str | None,
        session: ClientSession | None = None,
    ) -> bool:
        """Count one feedback on a live observation; with `call_id`, once per context call
        (a repeat matches nothing). False when nothing was counted."""
        query: dict[str, Any] = {"_id": observation_id, "deleted_at": None}
        change: dict[str, Any] = {"$inc": {"useful_count" if useful else "useless_count": 1}}
        if call_id is not None:
            query["feedback_calls"] = {"$ne": call_id}
            change["$push"] = {"feedback_calls": {"$each": [call_id], "$slice": -FEEDBACK_CALLS}}
        result = self.collection.update_one(query, change, session=session)
        return result.matched_count == 1

    def add_contradiction(
        self, observation_id: ObjectId, other_id: str, *, session: ClientSession | None = None
    ) -> None:
        """Flag an observation as contradicted by `other_id` (the newer one)."""
        self.collection.update_one(
            {"_id": observation_id}, {"$addToSet": {"contradicts": other_id}}, session=session
        )
