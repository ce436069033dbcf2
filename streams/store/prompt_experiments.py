"""`memory_prompt_experiments`: a draft prompt run beside the prompt in effect over a
scope's recent real inputs, kept with its result so it can be linked and re-run.

An experiment is evidence about a prompt, never memory: nothing here touches an
observation, a scope or a session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING, ReturnDocument
from pymongo.client_session import ClientSession
from pymongo.database import Database

from streams.store.indexes import IndexSpec, index

COLLECTION = "memory_prompt_experiments"
INDEXES: list[IndexSpec] = [
    # An agent's experiments, newest first (the paginated list; `_id` is the cursor).
    index(COLLECTION, "agent_id", ("_id", DESCENDING)),
    # A prompt kind's experiments, newest first (the prompt's history links them).
    index(COLLECTION, "agent_id", "kind", ("_id", DESCENDING)),
    # The experiments whose inputs hold a person's words (forgetting them scrubs those).
    index(COLLECTION, "agent_id", "units.user_ids"),
]
FORGET_ATTEMPTS = 5
FORGOTTEN = "withheld: a person this input was about was forgotten"


class PromptExperimentRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def insert(self, doc: dict[str, Any], *, session: ClientSession | None = None) -> None:
        self.collection.insert_one(doc, session=session)

    def get(self, experiment_id: ObjectId) -> dict[str, Any] | None:
        return self.collection.find_one({"_id": experiment_id})

    def page(
        self, *, agent_id: str, kind: str | None, before: ObjectId | None, limit: int
    ) -> list[dict[str, Any]]:
        """The agent's experiments (of one prompt kind, when given), newest first."""
        query: dict[str, Any] = {"agent_id": agent_id}
        if kind is not None:
            query["kind"] = kind
        if before is not None:
            query["_id"] = {"$lt": before}
        return list(self.collection.find(query).sort("_id", DESCENDING).limit(limit))

    def mark_running(self, experiment_id: ObjectId, *, job_id: str, now: datetime) -> None:
        self.collection.update_one(
            {"_id": experiment_id},
            {"$set": {"status": "running", "started_at": now, "job_id": job_id}},
        )

    def record_unit(self, experiment_id: ObjectId, unit: dict[str, Any]) -> None:
        """One session's (or pending set's) outcome, as soon as it is known: a run that
        dies half way still shows what it covered."""
        self.collection.update_one({"_id": experiment_id}, {"$push": {"units": unit}})

    def reset_units(self, experiment_id: ObjectId) -> None:
        """A retried job starts its units again (its earlier attempt's are dropped)."""
        self.collection.update_one({"_id": experiment_id}, {"$set": {"units": []}})

    def finish(
        self, experiment_id: ObjectId, *, status: str, summary: dict[str, Any], now: datetime
    ) -> dict[str, Any] | None:
        return self.collection.find_one_and_update(
            {"_id": experiment_id},
            {"$set": {"status": status, "summary": summary, "finished_at": now}},
            return_document=ReturnDocument.AFTER,
        )

    def forget_user(self, *, agent_id: str, user_id: str, limit: int = 1000) -> int:
        """Every input of the agent's experiments that was about `user_id` loses its words
        and that id (its counts stay); how many inputs. Each document is replaced only if
        its inputs did not change meanwhile (a running experiment adds them)."""
        scrubbed = 0
        query = {"agent_id": agent_id, "units.user_ids": user_id}
        for _ in range(FORGET_ATTEMPTS):
            docs = list(self.collection.find(query, {"units": 1}).limit(limit))
            if not docs:
                break
            for doc in docs:
                units = [_scrubbed(u, user_id) for u in doc["units"]]
                result = self.collection.update_one(
                    {"_id": doc["_id"], "units": doc["units"]}, {"$set": {"units": units}}
                )
                if result.modified_count:
                    scrubbed += sum(user_id in (u.get("user_ids") or []) for u in doc["units"])
        return scrubbed


def _scrubbed(unit: dict[str, Any], user_id: str) -> dict[str, Any]:
    if user_id not in (unit.get("user_ids") or []):
        return unit
    sides = {
        name: unit[name] | {"text": None, "items": []}
        for name in ("draft", "in_effect")
        if isinstance(unit.get(name), dict)
    }
    others = [u for u in unit["user_ids"] if u != user_id]
    return unit | sides | {"user_ids": others, "forgotten": FORGOTTEN}
