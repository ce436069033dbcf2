"""The detector rescan's reads and writes: its checkpoint document, and the walks over
observations and scopes in `_id` order that it resumes from (maintenance only)."""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.documents import Observation
from streams.core.screened import require_screened

COLLECTION = "memory_rescans"
OBSERVATIONS = "memory_observations"
SCOPES = "memory_scopes"
CONSOLIDATIONS = "memory_consolidations"
_LOWEST = ObjectId("0" * 24)  # a range on `_id` from the first document: served by its index


class RescanRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]
        self.observations = db[OBSERVATIONS]
        self.scopes = db[SCOPES]
        self.consolidations = db[CONSOLIDATIONS]

    # -- the checkpoint ------------------------------------------------------------------

    def checkpoint(self, name: str) -> dict[str, Any] | None:
        return self.collection.find_one({"_id": name})

    def save_checkpoint(
        self, name: str, fields: dict[str, Any], *, session: ClientSession | None = None
    ) -> None:
        self.collection.update_one({"_id": name}, {"$set": fields}, upsert=True, session=session)

    def drop_checkpoint(self, name: str, *, session: ClientSession | None = None) -> None:
        self.collection.delete_one({"_id": name}, session=session)

    # -- the walks -----------------------------------------------------------------------

    def observations_after(
        self, after: ObjectId | None, *, limit: int, session: ClientSession | None = None
    ) -> list[Observation]:
        """Observations not deleted, in `_id` order after `after`."""
        query: dict[str, Any] = {"_id": {"$gt": after or _LOWEST}, "deleted_at": None}
        cursor = self.observations.find(query, session=session).sort("_id", 1).limit(limit)
        return [Observation.from_mongo(d) for d in cursor]

    def consolidations_after(
        self, after: ObjectId | None, *, limit: int, session: ClientSession | None = None
    ) -> list[tuple[ObjectId, str, int]]:
        """(scope id, current consolidation text, its version) of scopes after `after`."""
        query: dict[str, Any] = {"_id": {"$gt": after or _LOWEST}}
        fields = {"consolidation": 1, "consolidation_version": 1}
        cursor = self.scopes.find(query, fields, session=session).sort("_id", 1).limit(limit)
        return [
            (d["_id"], d.get("consolidation") or "", int(d.get("consolidation_version") or 0))
            for d in cursor
        ]

    # -- the changes ---------------------------------------------------------------------

    def set_consolidation_text(
        self,
        scope_id: ObjectId,
        *,
        version: int,
        text: str,
        session: ClientSession,
    ) -> None:
        """Redact the current consolidation in place: the scope's copy and its version's
        (the same text; no new version: nothing was said anew)."""
        require_screened(text, what="consolidation")
        self.scopes.update_one(
            {"_id": scope_id, "consolidation_version": version},
            {"$set": {"consolidation": text}},
            session=session,
        )
        self.consolidations.update_one(
            {"scope_id": scope_id, "version": version},
            {"$set": {"text": text, "redacted": True}},
            session=session,
        )
