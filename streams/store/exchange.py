"""The writes and reads of export and import (`streams.people.export`,
`streams.people.exchange`) no other repository has."""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.core.documents import ConsolidationVersion
from streams.core.screened import require_screened
from streams.store import consolidations, observations
from streams.store.indexes import IndexSpec
from streams.store.lookups import find_in_parts

INDEXES: list[IndexSpec] = []  # by `_id`, and the consolidations' own (scope_id, version)


class ExchangeRepository:
    def __init__(self, db: Database) -> None:
        self.observations = db[observations.COLLECTION]
        self.consolidations = db[consolidations.COLLECTION]

    def observation_homes(self, observation_ids: list[ObjectId]) -> dict[str, tuple[str, str]]:
        """`id -> (agent_id, scope_id)` of those that exist (read in parts of 64 ids)."""
        docs = find_in_parts(
            self.observations, "_id", observation_ids, projection={"agent_id": 1, "scope_id": 1}
        )
        return {str(d["_id"]): (d["agent_id"], str(d["scope_id"])) for d in docs}

    def insert_versions(
        self,
        versions: list[tuple[ConsolidationVersion, Any]],
        *,
        session: ClientSession,
    ) -> None:
        """History versions as exported; a redacted one keeps its redaction time."""
        docs = []
        for version, redacted_at in versions:
            require_screened(version.text, what="consolidation text")
            doc = version.to_mongo()
            if redacted_at is not None:
                doc["redacted_at"] = redacted_at
            docs.append(doc)
        if docs:
            self.consolidations.insert_many(docs, session=session)
