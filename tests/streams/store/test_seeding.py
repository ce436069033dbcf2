"""The benchmarks' seeding repository: raw inserts and counts by kind, and nothing else."""

from __future__ import annotations

import pytest

from streams.store import MemoryStore
from streams.store.query_guard import QueryGuard
from streams.store.seeding import KINDS


def test_seeded_documents_are_found_counted_and_updated(
    store: MemoryStore, query_guard: QueryGuard
):
    inserted = store.seeding.insert_many(
        "agents", [{"_id": "a1", "scope_seq": 1}, {"_id": "a2", "scope_seq": 5}], ordered=False
    )
    assert inserted == 2
    store.seeding.update_one("agents", {"_id": "a1"}, {"$max": {"scope_seq": 3}})
    assert store.seeding.find_one("agents", {"_id": "a1"}) == {"_id": "a1", "scope_seq": 3}
    assert store.seeding.count("agents", {"_id": {"$in": ["a1", "a2", "a3"]}}) == 2
    assert store.seeding.estimated_count("agents") == 2
    found = store.seeding.find("agents", {"_id": {"$in": ["a1", "a2"]}}, {"_id": 1}, limit=1)
    assert len(found) == 1 and set(found[0]) == {"_id"}
    assert store.seeding.delete_all("agents") == 2
    assert store.seeding.estimated_count("agents") == 0
    # Whole-collection counts and deletes are what no service may send (the query guard
    # says so): one more reason the services never call `seeding`.
    assert {v.split(":")[0] for v in query_guard.take()} == {
        "count on memory_agents {}",
        "delete on memory_agents {}",
    }


def test_nothing_to_insert_is_no_round_trip(store: MemoryStore):
    assert store.seeding.insert_many("observations", []) == 0


def test_a_kind_it_does_not_know_is_refused(store: MemoryStore):
    with pytest.raises(KeyError, match="known kinds"):
        store.seeding.insert_one("memory_agents", {"_id": "x"})


def test_its_kinds_are_the_store_repositories_collections(store: MemoryStore):
    assert KINDS["scopes"] == store.scopes.collection.name
    assert KINDS["observations"] == store.observations.collection.name
    assert KINDS["jobs"] == store.jobs.collection.name
