"""Seeding and inspection for the benchmarks: documents written and counted as they are.

A benchmark seeds a store of a million observations in minutes by inserting documents
in batches, past the services (no screening, counters or search index: the benchmark
builds what it measures itself), then checks what it seeded. Before this repository it
reached the raw collections (`store.scopes.collection.insert_many(...)`); now the raw
handles stay inside `streams/store/`, and what a benchmark may do to a collection is the
short list below, by the collection's kind (`KINDS`). The services never call it (the
architecture test holds that: `seeding` outside `benchmarks/` and `tests/` fails).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pymongo.collection import Collection
from pymongo.database import Database

from streams.store import (
    agents,
    audit,
    context_calls,
    jobs,
    observations,
    scopes,
    search,
    usage,
    webhooks,
)

Document = dict[str, Any]
# A kind names a collection by its repository (`store.<kind>`), or a repository's
# second collection (`audit_meta`, `usage_scopes`, ...).
KINDS: dict[str, str] = {
    "agents": agents.COLLECTION,
    "scopes": scopes.COLLECTION,
    "observations": observations.COLLECTION,
    "jobs": jobs.COLLECTION,
    "audit": audit.COLLECTION,
    "audit_meta": audit.META,
    "context_calls": context_calls.COLLECTION,
    "search_index": search.COLLECTION,
    "usage": usage.COLLECTION,
    "usage_scopes": usage.SCOPES,
    "usage_top": usage.TOP,
    "webhooks": webhooks.HOOKS,
    "webhook_deliveries": webhooks.DELIVERIES,
}


class SeedingRepository:
    """Raw inserts, updates and counts by kind, for seeding benchmarks (not for services)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _collection(self, kind: str) -> Collection:
        if kind not in KINDS:
            raise KeyError(f"no seeding for {kind!r}; known kinds: {', '.join(sorted(KINDS))}")
        return self._db[KINDS[kind]]

    # -- writing -------------------------------------------------------------------------

    def insert_one(self, kind: str, doc: Mapping[str, Any]) -> None:
        self._collection(kind).insert_one(dict(doc))

    def insert_many(
        self, kind: str, docs: Iterable[Mapping[str, Any]], *, ordered: bool = True
    ) -> int:
        """Insert `docs` in one round trip (nothing for none); how many were inserted."""
        batch = [dict(d) for d in docs]
        if batch:
            self._collection(kind).insert_many(batch, ordered=ordered)
        return len(batch)

    def update_one(
        self,
        kind: str,
        query: Mapping[str, Any],
        update: Mapping[str, Any],
        *,
        upsert: bool = False,
    ) -> None:
        """One update document (`$set`, `$max`, `$min`) applied to the first match."""
        self._collection(kind).update_one(dict(query), dict(update), upsert=upsert)

    def delete_all(self, kind: str) -> int:
        """Empty the collection (a benchmark's fresh start); how many were removed."""
        return self._collection(kind).delete_many({}).deleted_count

    def drop_database(self) -> None:
        """Drop the store's whole database (a seed cut short starts over)."""
        self._db.client.drop_database(self._db.name)

    # -- checking ------------------------------------------------------------------------

    def estimated_count(self, kind: str) -> int:
        """The collection's size from its metadata (no scan: a million documents are fine)."""
        return self._collection(kind).estimated_document_count()

    def count(self, kind: str, query: Mapping[str, Any]) -> int:
        return self._collection(kind).count_documents(dict(query))

    def find_one(self, kind: str, query: Mapping[str, Any]) -> Document | None:
        return self._collection(kind).find_one(dict(query))

    def find(
        self,
        kind: str,
        query: Mapping[str, Any],
        fields: Mapping[str, Any] | None = None,
        *,
        limit: int = 0,
    ) -> list[Document]:
        """The matching documents (only `fields`, if given; at most `limit`, if not 0)."""
        cursor = self._collection(kind).find(dict(query), dict(fields) if fields else None)
        return list(cursor.limit(limit))
