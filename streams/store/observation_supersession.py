"""`memory_observations`, the queries of supersession (`streams.memory.supersession`): mark
an observation replaced by a newer one, undo it, and read a chain. Mixed into
`ObservationRepository`, with the index the chain reads need beside them."""

from __future__ import annotations

from datetime import datetime

from bson import ObjectId
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from streams.core.documents import Observation
from streams.core.exceptions import Conflict
from streams.store.indexes import IndexSpec
from streams.store.scopes import bump_log_rev

COLLECTION = "memory_observations"
MAX_CHAIN = 50  # a chain is walked this far at most (it never loops; the bound keeps it so)
INDEXES: list[IndexSpec] = [
    # Who a newer observation replaced (the chain on the scope page, the loop check); sparse:
    # only superseded observations hold the field.
    IndexSpec(
        collection=COLLECTION,
        keys=(("superseded_by", 1),),
        name="superseded_by",
        options={"sparse": True},
    ),
]


class SupersessionQueries:
    collection: Collection
    scopes: Collection

    def mark_superseded(
        self,
        observation_id: ObjectId,
        *,
        scope_id: ObjectId,
        by: ObjectId,
        valid_until: datetime,
        session: ClientSession | None = None,
    ) -> bool:
        """Once, and only of a live current observation: False otherwise. The text key goes
        (a later add of the same words is a new fact, not a duplicate of a replaced one)."""
        result = self.collection.update_one(
            {
                "_id": observation_id,
                "deleted_at": None,
                "review_status": None,
                "superseded_by": {"$exists": False},
            },
            {
                "$set": {"superseded_by": by, "valid_until": valid_until},
                "$unset": {"text_key": ""},
            },
            session=session,
        )
        if result.matched_count:
            bump_log_rev(self.scopes, scope_id, session=session)
        return result.matched_count == 1

    def flag_current(
        self, observation_id: ObjectId, *, contradicts: str, session: ClientSession | None
    ) -> bool:
        """Flag a still-current observation as contradicting `contradicts`; False when it is
        not current. A write, so a crossing supersession conflicts with it."""
        result = self.collection.update_one(
            {"_id": observation_id, "deleted_at": None, "superseded_by": {"$exists": False}},
            {"$addToSet": {"contradicts": contradicts}},
            session=session,
        )
        return result.matched_count == 1

    def unmark_superseded(
        self,
        observation: Observation,
        *,
        text_key: str,
        session: ClientSession | None = None,
    ) -> bool:
        """Current again; a Conflict when the scope holds its words again meanwhile."""
        try:
            result = self.collection.update_one(
                {"_id": ObjectId(observation.id), "superseded_by": {"$exists": True}},
                {
                    "$unset": {"superseded_by": "", "valid_until": ""},
                    "$set": {"text_key": text_key},
                },
                session=session,
            )
        except DuplicateKeyError as exc:
            raise Conflict("the scope holds these words again in another observation") from exc
        if result.matched_count:
            bump_log_rev(self.scopes, ObjectId(observation.scope_id), session=session)
        return result.matched_count == 1

    def superseded_by_ids(
        self,
        newer_ids: list[ObjectId],
        *,
        limit: int = MAX_CHAIN,
        session: ClientSession | None = None,
    ) -> list[Observation]:
        """The observations these replaced (one step of a chain, back in time), bounded."""
        if not newer_ids:
            return []
        cursor = self.collection.find(
            {"superseded_by": {"$in": newer_ids}}, limit=limit, session=session
        )
        return [Observation.from_mongo(d) for d in cursor]
