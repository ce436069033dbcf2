"""What each model server accepted (`streams.llm.negotiation`), shared by every process.

A job runs in a child process or on a worker host; the step down it learns (the server
refused `json_schema`, or `temperature`) is written here, so the other processes start
from it and `/api/v1/health` shows it. One small document per base URL, by `_id`.
"""

from __future__ import annotations

from typing import Any

from pymongo.database import Database

COLLECTION = "llm_servers"


class LLMServerRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def load(self, base_url: str) -> dict[str, Any] | None:
        doc = self.collection.find_one({"_id": base_url})
        return None if doc is None else {k: v for k, v in doc.items() if k != "_id"}

    def save(self, base_url: str, terms: dict[str, Any]) -> None:
        self.collection.replace_one({"_id": base_url}, {"_id": base_url, **terms}, upsert=True)
