"""The reads of `manage.py recount`: stored truth for the counters the dashboard shows.

Every find is bounded and led by a declared index (scopes by `agent_id, seq`).
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING
from pymongo.database import Database

from streams.store import scopes

PAGE = 500


class RecountRepository:
    def __init__(self, db: Database) -> None:
        self.scopes = db[scopes.COLLECTION]

    def scope_totals(self, agent_id: str) -> dict[str, int]:
        """How many scopes the agent has, their observations and their pending ones."""
        totals = {"scopes": 0, "observations": 0, "pending": 0}
        after = -1
        while True:
            page: list[dict[str, Any]] = list(
                self.scopes.find(
                    {"agent_id": agent_id, "seq": {"$gt": after}},
                    {"seq": 1, "observation_count": 1, "pending_observation_ids": 1},
                )
                .sort("seq", ASCENDING)
                .limit(PAGE)
            )
            for doc in page:
                totals["scopes"] += 1
                totals["observations"] += int(doc.get("observation_count", 0))
                totals["pending"] += len(doc.get("pending_observation_ids") or [])
            if len(page) < PAGE:
                return totals
            after = page[-1]["seq"]
