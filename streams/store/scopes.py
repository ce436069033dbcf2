"""`memory_scopes`: one document per scope; the unique index keeps one per identity.

Long because: the scope repository: one collection's queries, each led by a declared
index (the id lists are already apart, in `scope_lists.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError

from streams.core.documents import EPOCH, Scope, ScopeType
from streams.core.screened import ScreenedText, require_screened
from streams.store.flavour import workarounds
from streams.store.indexes import IndexSpec, RetiredIndex, index
from streams.store.paging import (
    page_by_seq,
    page_by_seq_ascending,
    page_by_seq_filtered,
)
from streams.store.scope_lists import ScopeIdLists
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_scopes"
MAX_SCOPES_PER_MEMBER = 10  # a user or group has one scope per agent; a margin for legacy data
INDEXES: list[IndexSpec] = [
    # Identity: at most one scope per (agent, type, user, group, shard name).
    index(COLLECTION, "agent_id", "scope_type", "user_id", "group_id", "name", unique=True),
    # Lists: an agent's scopes newest first, paged by a window on `seq`.
    index(COLLECTION, "agent_id", "seq", unique=True),
    # A user's scopes across types (user audit, the scope browser's user filter).
    index(COLLECTION, "agent_id", "user_id"),
    index(COLLECTION, "agent_id", "group_id"),
    # Retention: the scopes with a `max_observations` (sparse: most have none).
    IndexSpec(
        collection=COLLECTION,
        keys=(("max_observations", 1), ("_id", 1)),
        name="max_observations",
        options={"sparse": True},
    ),
    # Consolidation by age: the scopes whose oldest pending id (`pending_since`, kept
    # with `$min` as ids go pending; an ObjectId's first bytes are its creation time)
    # is older than a time. One entry a scope, where a multikey index over the pending
    # list was an entry per pending id, rewritten at every write of the scope.
    IndexSpec(
        collection=COLLECTION,
        keys=(("pending_since", 1), ("_id", 1)),
        name="pending_since",
    ),
]
RETIRED_INDEXES = (
    RetiredIndex(
        COLLECTION,
        "pending_age",
        "multikey over the pending list: each add's claim of the scope rewrote an entry per "
        "pending id (16 clients: about a third of the adds a second); `pending_since` answers "
        "the age sweep with one entry",
    ),
)


class ScopeRepository(ScopeIdLists):
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(self, scope: Scope, *, session: ClientSession | None = None) -> bool:
        """Insert a new scope; False when its identity already exists (which, in a
        transaction, also aborts the transaction). A scope is made empty; any text it
        carries has passed the screen."""
        require_screened(scope.consolidation, what="consolidation text")
        for pin in scope.pins:
            require_screened(pin, what="pin")
        try:
            self.collection.insert_one(scope.to_mongo(), session=session)
        except DuplicateKeyError:
            return False
        return True

    def get(self, scope_id: ObjectId, *, session: ClientSession | None = None) -> Scope | None:
        doc = self.collection.find_one({"_id": scope_id}, session=session)
        return Scope.from_mongo(doc) if doc else None

    def ids_after(self, after: ObjectId | None, *, limit: int) -> list[ObjectId]:
        """Scope ids in `_id` order after `after` (walks every scope: maintenance only)."""
        low = after if after is not None else ObjectId("0" * 24)
        cursor = self.collection.find({"_id": {"$gt": low}}, {"_id": 1}).sort("_id", 1).limit(limit)
        return [d["_id"] for d in cursor]

    def with_retention(self, *, after: ObjectId | None, limit: int) -> list[Scope]:
        """Scopes with a `max_observations`, in `_id` order after `after`."""
        query: dict[str, Any] = {"max_observations": {"$gte": 1}}
        if after is not None:
            query["_id"] = {"$gt": after}
        cursor = self.collection.find(query).sort("_id", 1).limit(limit)
        return [Scope.from_mongo(d) for d in cursor]

    def pending_older_than(
        self, before: ObjectId, *, after: ObjectId | None, limit: int
    ) -> list[Scope]:
        """Active scopes whose `pending_since` is older than `before`, in `_id` order after
        `after` (the age sweep's pages). It may be older than the list's oldest id (ids
        leave pending without it: the sweep checks the list, and heals it)."""
        query: dict[str, Any] = {"pending_since": {"$lt": before}, "is_active": True}
        if after is not None:
            query["_id"] = {"$gt": after}
        cursor = self.collection.find(query).sort("_id", 1).limit(limit)
        return [Scope.from_mongo(d) for d in cursor]

    def pending_since_heal(self, scope_id: ObjectId) -> None:
        """`pending_since` made the pending list's oldest id again (unset when it is
        empty), unless a write moved it on since this read (a restore's older ids)."""
        doc = self.collection.find_one(
            {"_id": scope_id}, {"pending_observation_ids": 1, "pending_since": 1}
        )
        if doc is None:
            return
        oldest = min(doc.get("pending_observation_ids") or [], default=None)
        seen = doc.get("pending_since")
        if seen == oldest:
            return
        update = (
            {"$set": {"pending_since": oldest}} if oldest else {"$unset": {"pending_since": ""}}
        )
        self.collection.update_one({"_id": scope_id, "pending_since": seen}, update)

    def pending_since_backfill(self, *, batch: int = 500) -> int:
        """Scopes stored before `pending_since` with pending ids get it (the deploy's
        `ensure_indexes`); how many. Every scope read once, in `_id` pages."""
        done = 0
        after = ObjectId("0" * 24)
        while True:
            query = {"_id": {"$gt": after}}
            projection = {"pending_observation_ids": 1, "pending_since": 1}
            docs = list(self.collection.find(query, projection).sort("_id", 1).limit(batch))
            for doc in docs:
                ids = doc.get("pending_observation_ids") or []
                if ids and "pending_since" not in doc:
                    self.collection.update_one(
                        {"_id": doc["_id"]}, {"$min": {"pending_since": min(ids)}}
                    )
                    done += 1
            if len(docs) < batch:
                return done
            after = docs[-1]["_id"]

    def count_retention_purge(self, scope_id: ObjectId, count: int, *, now: datetime) -> None:
        """Retention removed `count` observations of the scope (shown on its page)."""
        self.collection.update_one(
            {"_id": scope_id},
            {"$inc": {"retention_purged": count}, "$set": {"retention_purged_at": now}},
        )

    def get_many(self, scope_ids: list[ObjectId]) -> list[Scope]:
        return [Scope.from_mongo(d) for d in self.collection.find({"_id": {"$in": scope_ids}})]

    def find_by_identity(
        self,
        *,
        agent_id: str,
        scope_type: ScopeType,
        user_id: str | None,
        group_id: str | None,
        name: str | None,
        session: ClientSession | None = None,
    ) -> Scope | None:
        doc = self.collection.find_one(
            {
                "agent_id": agent_id,
                "scope_type": scope_type,
                "user_id": user_id,
                "group_id": group_id,
                "name": name,
            },
            session=session,
        )
        return Scope.from_mongo(doc) if doc else None

    def mark_forgotten(
        self,
        *,
        agent_id: str,
        user_id: str,
        at: datetime | None,
        session: ClientSession | None = None,
    ) -> None:
        """Set (a datetime) or clear (None) the user's own scope's `forgotten_at`: the
        tombstone's mark on the scope a hand add reads anyway."""
        identity: dict[str, str | None] = {
            "agent_id": agent_id,
            "scope_type": "individual",
            "user_id": user_id,
            "group_id": None,
            "name": None,
        }
        change = {"$set": {"forgotten_at": at}} if at else {"$unset": {"forgotten_at": ""}}
        self.collection.update_one(identity, change, session=session)

    def page(
        self,
        *,
        agent_id: str,
        top_seq: int,
        before: int | None,
        limit: int,
        scope_type: ScopeType | Literal["shard"] | None = None,
        user_id: str | None = None,
        group_id: str | None = None,
        text: str | None = None,
        consolidation_text: str | None = None,
        ascending: bool = False,
    ) -> tuple[list[Scope], int | None]:
        """A page of the agent's scopes by `seq` (newest first, or oldest first).

        Every filter rides inside a bounded window of `seq` on the `(agent_id, seq)`
        index: a text filter (names, or consolidation text) never scans more than the
        windows `page_by_seq` allows, whatever the number of scopes.
        """
        base: dict[str, Any] = {"agent_id": agent_id}
        if user_id or group_id:
            # A user has one individual scope per agent, a group one group scope: their
            # own indexes find it directly, and the other filters are checked here.
            base["user_id" if user_id else "group_id"] = user_id or group_id
            keep = _scope_matcher(scope_type, text, consolidation_text)
            found = self.collection.find(base).limit(MAX_SCOPES_PER_MEMBER)
            docs = [d for d in found if keep(d) and (not group_id or d.get("group_id") == group_id)]
            docs.sort(key=lambda d: d["seq"], reverse=not ascending)
            return [Scope.from_mongo(d) for d in docs[:limit]], None
        if scope_type or text or consolidation_text:
            page = page_by_seq_filtered(
                self.collection,
                base_filter=base,
                keep=_scope_matcher(scope_type, text, consolidation_text),
                top_seq=top_seq,
                before=before,
                limit=limit,
                ascending=ascending,
            )
        elif ascending:
            page = page_by_seq_ascending(
                self.collection, base_filter=base, top_seq=top_seq, after=before, limit=limit
            )
        else:
            page = page_by_seq(
                self.collection, base_filter=base, top_seq=top_seq, before=before, limit=limit
            )
        return [Scope.from_mongo(d) for d in page.docs], page.next_before

    def active_shards(self, agent_id: str, *, limit: int) -> list[Scope]:
        """The agent's active collective shards, by name.

        The filter is exactly a prefix of the identity index; the rest (named, active) is
        checked here, on the agent's few collective scopes. A residual `name: {$ne: null}` or
        `is_active` in the filter made the embedded store scan every scope of the agent
        (0.7 ms became 100 ms at 3,000 scopes).
        """
        cursor = self.collection.find({"agent_id": agent_id, "scope_type": "collective"}).limit(
            limit + 1
        )
        shards = [
            Scope.from_mongo(d) for d in cursor if d.get("name") is not None and d.get("is_active")
        ]
        return sorted(shards, key=lambda s: s.name or "")[:limit]

    def remember_groups(self, scope_id: ObjectId, groups: list[dict[str, str]]) -> None:
        """Record the groups a user was seen in (propagation targets)."""
        self.collection.update_one({"_id": scope_id}, {"$addToSet": {"groups": {"$each": groups}}})

    def acquire_lease(
        self, scope_id: ObjectId, *, owner: str, now: datetime, until: datetime
    ) -> bool:
        """One consolidation run at a time per scope: take the lease if it is free or expired."""
        result = self.collection.update_one(
            {"_id": scope_id, "lease_until": {"$lt": now}},
            {"$set": {"lease_owner": owner, "lease_until": until}},
        )
        return result.matched_count == 1

    def take_back_lease(self, scope_id: ObjectId, *, owner: str, until: datetime) -> bool:
        """The lease `owner` already holds (its run was taken over after its runner died):
        renewed to `until`."""
        result = self.collection.update_one(
            {"_id": scope_id, "lease_owner": owner}, {"$set": {"lease_until": until}}
        )
        return result.matched_count == 1

    def lease_holder(self, scope_id: ObjectId) -> tuple[str | None, datetime] | None:
        """(owner, until) of the scope's lease; None when the scope does not exist."""
        doc = self.collection.find_one(
            {"_id": scope_id}, {"lease_owner": 1, "lease_until": 1, "_id": 0}
        )
        if doc is None:
            return None
        return doc.get("lease_owner"), doc.get("lease_until") or EPOCH

    def take_over_lease(
        self, scope_id: ObjectId, *, holder: str, owner: str, until: datetime
    ) -> bool:
        """Take the lease from `holder` (a run known to be dead) if it still holds it."""
        result = self.collection.update_one(
            {"_id": scope_id, "lease_owner": holder},
            {"$set": {"lease_owner": owner, "lease_until": until}},
        )
        return result.matched_count == 1

    def release_lease(self, scope_id: ObjectId, *, owner: str) -> None:
        self.collection.update_one(
            {"_id": scope_id, "lease_owner": owner},
            {"$set": {"lease_owner": None, "lease_until": EPOCH}},
        )

    def update_fields(
        self, scope_id: ObjectId, fields: dict[str, Any], *, session: ClientSession | None = None
    ) -> bool:
        require_screened(fields.get("consolidation"), what="consolidation text")
        for pin in fields.get("pins") or []:
            require_screened(pin, what="pin")
        result = self.collection.update_one({"_id": scope_id}, {"$set": fields}, session=session)
        return result.matched_count == 1

    def reserve_observation_seqs(
        self,
        scope_id: ObjectId,
        *,
        expected_seq: int,
        count: int,
        pending_ids: list[ObjectId],
        now: datetime,
        expected_log_rev: int | None = None,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
    ) -> bool:
        """Claim `count` sequence numbers after `expected_seq` and make `pending_ids` pending
        (observations stored as consolidated take a number too); False if the log moved,
        or (with `expected_log_rev`) if a stored observation changed since that revision.
        With `writes` the claim joins the batch (never its transaction's first command):
        True here, and a miss is the batch's `Conflict` when it is sent."""
        update: dict[str, Any] = {
            "$inc": {"observation_seq": count, "observation_count": count},
            "$set": {"last_activity_at": now},
        }
        if pending_ids:
            update["$push"] = {"pending_observation_ids": {"$each": pending_ids}}
            update["$min"] = {"pending_since": min(pending_ids)}
        claim: dict[str, Any] = {"_id": scope_id, "observation_seq": expected_seq}
        if expected_log_rev is not None:
            # A scope stored before the field existed has none: revision 0.
            claim["log_rev"] = expected_log_rev if expected_log_rev else {"$in": [0, None]}
        if writes is not None:
            writes.add(
                UpdateOne(claim, update, namespace=self.collection.full_name), must_match=True
            )
            return True
        result = self.collection.update_one(claim, update, session=session)
        return result.matched_count == 1

    def commit_consolidation(
        self,
        scope_id: ObjectId,
        *,
        expected_version: int,
        text: str,
        absorbed_ids: list[ObjectId],
        actor: str | None,
        now: datetime,
        rebuilt_ids: list[ObjectId] | None = None,
        pins: list[str] | None = None,
        session: ClientSession | None = None,
    ) -> bool:
        """Store a new consolidation version and drop what it absorbed from pending, at once
        (and, for a rebuild, the observations it rebuilt without from the rebuild list).

        The version in the filter makes a concurrent commit a miss (False), never a double;
        so do the `pins` the text was made to hold, when there are any (pins changed since).
        On the embedded store the lists are set whole from a read of the scope (see
        `_lists_without`): a `$pull` with an `$in` of 10,000 ids outlived its transaction
        limit. On mongod (`streams.store.flavour`) the `$pull` runs.
        """
        require_screened(text, what="consolidation text")
        update: dict[str, Any] = {
            "$set": {
                "consolidation": text,
                "consolidation_version": expected_version + 1,
                "consolidation_updated_at": now,
                "consolidation_updated_by": actor,
                "last_activity_at": now,
            },
        }
        drop = {
            "pending_observation_ids": set(absorbed_ids),
            "rebuild_observation_ids": set(rebuilt_ids or []),
        }
        query: dict[str, Any] = {"_id": scope_id, "consolidation_version": expected_version}
        if workarounds(self.collection.database.client).lists_set_whole:
            read = self._lists_without(scope_id, drop, session=session)
            if read is None:
                return False
            before, kept = read
            update["$set"].update(kept)
            if session is None:  # no snapshot: the lists must still be what was read
                query.update({name: before[name] for name in kept})
        else:  # mongod: one `$pull` per list, linear, under the version condition
            pulls = {name: {"$in": list(ids)} for name, ids in drop.items() if ids}
            if pulls:
                update["$pull"] = pulls
        if pins:
            query["pins"] = list(pins)
        result = self.collection.update_one(query, update, session=session)
        return result.matched_count == 1

    def set_pins(
        self,
        scope_id: ObjectId,
        pins: Sequence[ScreenedText],
        *,
        session: ClientSession | None = None,
    ) -> bool:
        for pin in pins:
            require_screened(pin, what="pin")
        result = self.collection.update_one(
            {"_id": scope_id}, {"$set": {"pins": list(pins)}}, session=session
        )
        return result.matched_count == 1

    def count_blocked(
        self, scope_id: ObjectId, blocked: dict[str, int], *, session: ClientSession
    ) -> None:
        """Add to the counts of copies this scope's propagation was refused, by flag."""
        if blocked:
            self.collection.update_one(
                {"_id": scope_id},
                {"$inc": {f"propagation_blocked.{flag}": n for flag, n in blocked.items()}},
                session=session,
            )

    def count_deleted(self, scope_id: ObjectId, *, session: ClientSession | None = None) -> None:
        """One observation left the scope's count (a soft delete: it counts nowhere)."""
        self.collection.update_one(
            {"_id": scope_id}, {"$inc": {"observation_count": -1}}, session=session
        )


def bump_log_rev(
    collection: Collection, scope_id: ObjectId, *, session: ClientSession | None
) -> None:
    """A stored observation of the scope changed its text or liveness: a new revision of
    its log (`Scope.log_rev`), so no process reuses the window it read before. Call it
    in the change's transaction, or after the change (never before: a window read in
    between would be kept under the new revision)."""
    collection.update_one({"_id": scope_id}, {"$inc": {"log_rev": 1}}, session=session)


SHARD_TYPE = "shard"  # the scope list's type filter for named collective scopes


def _scope_matcher(
    scope_type: str | None, text: str | None, consolidation_text: str | None
) -> Callable[[dict[str, Any]], bool]:
    """The scope list's filters beyond the agent, checked on each document read."""
    label = text.lower() if text else None
    words = consolidation_text.lower() if consolidation_text else None

    def keep(doc: dict[str, Any]) -> bool:
        if scope_type == SHARD_TYPE:  # a shard is a named collective scope
            if doc.get("scope_type") != "collective" or doc.get("name") is None:
                return False
        elif scope_type and doc.get("scope_type") != scope_type:
            return False
        if label and label not in (doc.get("label_text") or ""):
            return False
        return not words or words in (doc.get("consolidation") or "").lower()

    return keep
