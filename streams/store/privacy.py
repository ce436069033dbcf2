"""The queries of the user audit and of forgetting a user, across the memory collections.

Kept apart from the per-collection repositories because they exist for one
purpose: find everything about one user of one agent, and remove it for good.
Every find is bounded (a limit, an `_id` list, or a closed `seq`/`version`
range) and led by a declared index.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.documents import Observation
from streams.store import consolidations, observations, questions, scopes, search, sessions
from streams.store.indexes import IndexSpec, index
from streams.store.lookups import find_in_parts

VERSION_CHUNK = 200  # versions read per query when redacting
INDEXES: list[IndexSpec] = [
    # Forget user: the sessions (buffers) the user spoke in.
    index(sessions.BUFFERS, "agent_id", "user_id"),
    # A user's observations across scopes, paged by `_id`. Without `_id` in the key the
    # embedded store answered `{agent_id, related_user_ids, _id: {$gt}}` by scanning
    # (1.5 s at 10,000 observations); with it, 7 ms.
    index(observations.COLLECTION, "agent_id", "related_user_ids", "_id"),
]
BATCH = 500


class PrivacyRepository:
    def __init__(self, db: Database) -> None:
        self.scopes = db[scopes.COLLECTION]
        self.observations = db[observations.COLLECTION]
        self.consolidations = db[consolidations.COLLECTION]
        self.questions = db[questions.COLLECTION]
        self.messages = db[sessions.MESSAGES]
        self.buffers = db[sessions.BUFFERS]
        self.search_terms = db[search.COLLECTION]

    # -- reads -----------------------------------------------------------------------

    def related_observations(
        self, agent_id: str, user_id: str, *, after: ObjectId | None, limit: int = BATCH
    ) -> list[Observation]:
        """Observations of the agent whose `related_user_ids` hold the user, by `_id`."""
        query: dict[str, Any] = {"agent_id": agent_id, "related_user_ids": user_id}
        if after is not None:
            query["_id"] = {"$gt": after}
        cursor = self.observations.find(query).sort("_id", ASCENDING).limit(limit)
        return [Observation.from_mongo(d) for d in cursor]

    def scope_observations(
        self, scope_id: ObjectId, *, low_seq: int, high_seq: int
    ) -> list[Observation]:
        """A scope's observations with `low_seq < seq <= high_seq`, oldest first."""
        cursor = (
            self.observations.find(
                {"scope_id": scope_id, "seq": {"$gt": low_seq, "$lte": high_seq}}
            )
            .sort("seq", ASCENDING)
            .limit(high_seq - low_seq)
        )
        return [Observation.from_mongo(d) for d in cursor]

    def copies_of(self, origin_ids: list[ObjectId], *, limit: int) -> list[Observation]:
        """Propagated copies of these observations."""
        if not origin_ids:
            return []
        cursor = self.observations.find({"propagated_from": {"$in": origin_ids}}).limit(limit)
        return [Observation.from_mongo(d) for d in cursor]

    def history_texts(
        self, scope_id: ObjectId, *, low_version: int, high_version: int
    ) -> dict[int, str]:
        """The texts of the versions in `[low_version, high_version]`, by version."""
        cursor = self.consolidations.find(
            {"scope_id": scope_id, "version": {"$gte": low_version, "$lte": high_version}},
            {"version": 1, "text": 1, "redacted_at": 1},
        ).limit(high_version - low_version + 1)
        return {
            int(d["version"]): d.get("text") or ""
            for d in cursor
            if d.get("redacted_at") is None  # a redacted one holds the marker only
        }

    def history_absorbed(
        self, scope_id: ObjectId, *, low_version: int, high_version: int
    ) -> list[dict[str, Any]]:
        """Version numbers and absorbed ids in `[low_version, high_version]` (no texts)."""
        cursor = (
            self.consolidations.find(
                {"scope_id": scope_id, "version": {"$gte": low_version, "$lte": high_version}},
                {"version": 1, "absorbed_observation_ids": 1},
            )
            .sort("version", ASCENDING)
            .limit(high_version - low_version + 1)
        )
        return list(cursor)

    def pull_pending(self, scope_id: ObjectId, observation_ids: list[ObjectId]) -> None:
        self.scopes.update_one(
            {"_id": scope_id}, {"$pull": {"pending_observation_ids": {"$in": observation_ids}}}
        )

    # -- writes ----------------------------------------------------------------------

    def redact_versions(
        self,
        scope_id: ObjectId,
        *,
        low_version: int,
        high_version: int,
        marker: str,
        forgotten: list[ObjectId],
        now: datetime,
        session: ClientSession | None = None,
    ) -> int:
        """Replace the texts of these versions by `marker` and drop the forgotten ids.

        Each version's absorbed list is read in the caller's transaction and set whole
        where it changes: a `$pull {$in: forgotten}` costs list x forgotten comparisons
        on the embedded store (10,000 forgotten against 1,000 absorbed: past its
        transaction limit)."""
        result = self.consolidations.update_many(
            {"scope_id": scope_id, "version": {"$gte": low_version, "$lte": high_version}},
            {"$set": {"text": marker, "redacted_at": now, "fidelity": None, "coverage": []}},
            session=session,
        )
        gone = set(forgotten)
        for low in range(low_version, high_version + 1, VERSION_CHUNK):
            high = min(low + VERSION_CHUNK - 1, high_version)
            writes = []
            cursor = self.consolidations.find(
                {"scope_id": scope_id, "version": {"$gte": low, "$lte": high}},
                {"absorbed_observation_ids": 1},
                session=session,
            ).limit(high - low + 1)
            for doc in cursor:
                before = doc.get("absorbed_observation_ids") or []
                after = [i for i in before if i not in gone]
                if len(after) != len(before):
                    writes.append(
                        UpdateOne(
                            {"_id": doc["_id"]}, {"$set": {"absorbed_observation_ids": after}}
                        )
                    )
            if writes:
                self.consolidations.bulk_write(writes, ordered=False, session=session)
        return result.modified_count

    def unlink_observations(
        self, scope_id: ObjectId, observation_ids: list[ObjectId], *, count: int
    ) -> None:
        """Take removed observations out of a scope's pending list and count."""
        self.scopes.update_one(
            {"_id": scope_id},
            {
                "$pull": {"pending_observation_ids": {"$in": observation_ids}},
                "$inc": {"observation_count": -count},
            },
        )

    def prune_search_terms(
        self, scope_id: ObjectId, terms: list[str], *, session: ClientSession | None = None
    ) -> int:
        """Drop the scope's term documents no observation holds any more: a term alone
        (a name, a place) can be what a forgotten user said. With `session`, in the
        transaction that took the text out of search (its counts read as it left them)."""
        if not terms:
            return 0
        keys = [search.term_key(scope_id, t) for t in terms]
        found = find_in_parts(
            self.search_terms,
            "_id",
            keys,
            extra={"df": {"$lte": 0}},
            projection={"_id": 1},
            session=session,
        )
        dead = [d["_id"] for d in found]
        if not dead:
            return 0
        # The heads, their sealed chunks (`k`), and heads of the earlier layout (no `k`).
        # Not a pending add's document (`search_pending`): its `k` lists every term of a
        # new observation, which a dead term may be again.
        removed = self.search_terms.delete_many(
            {"k": {"$in": dead}, "d": {"$exists": False}}, session=session
        ).deleted_count
        return (
            removed
            + self.search_terms.delete_many({"_id": {"$in": dead}}, session=session).deleted_count
        )

    def drop_search_totals(self, scope_id: ObjectId) -> int:
        return self.search_terms.delete_one({"_id": search.totals_key(scope_id)}).deleted_count

    # Multi-document deletes run inside the caller's transaction (`session`): on the
    # embedded store a deleteMany outside one retries a write conflict with a concurrent
    # transaction (an ingest or a formation) while holding the collection's lock, and the
    # two wait on each other for ever. In a transaction the conflict surfaces at once and
    # the whole transaction is retried.

    def delete_observations(
        self,
        scope_id: ObjectId,
        observation_ids: list[ObjectId],
        *,
        session: ClientSession | None = None,
    ) -> int:
        """Delete observations of one scope for good; its log revision moves when any
        was there (`scopes.bump_log_rev`)."""
        if not observation_ids:
            return 0
        deleted = self.observations.delete_many(
            {"_id": {"$in": observation_ids}}, session=session
        ).deleted_count
        if deleted:
            scopes.bump_log_rev(self.scopes, scope_id, session=session)
        return deleted

    def delete_scope(
        self, scope_id: ObjectId, *, session: ClientSession | None = None
    ) -> dict[str, int]:
        """A whole scope: its observations, its history, the scope itself."""
        return {
            "memory_observations": self.observations.delete_many(
                {"scope_id": scope_id}, session=session
            ).deleted_count,
            "memory_consolidations": self.consolidations.delete_many(
                {"scope_id": scope_id}, session=session
            ).deleted_count,
            # A scope's own questions may name its user ("What plan is Gene on?").
            "memory_questions": self.questions.delete_many(
                {"scope_id": scope_id}, session=session
            ).deleted_count,
            "memory_scopes": self.scopes.delete_one(
                {"_id": scope_id}, session=session
            ).deleted_count,
        }

    def delete_user_messages(
        self, agent_id: str, user_id: str, *, session: ClientSession | None = None
    ) -> int:
        """The user's buffered messages, formed or not, in every session (the buffers are
        then recounted or dropped one by one: `SessionRepository.forget_speaker`)."""
        return self.messages.delete_many(
            {"agent_id": agent_id, "user_id": user_id}, session=session
        ).deleted_count
