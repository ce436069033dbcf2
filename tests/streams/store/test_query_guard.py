"""The query guard catches what the suite must never send, and lets indexed queries pass."""

from __future__ import annotations

from bson import ObjectId

from tests.factories import ScopeFactory


def test_guard_flags_a_deliberately_unindexed_query(store, query_guard):
    list(store.observations.collection.find({"content": "anything"}).limit(5))
    violations = query_guard.take()
    assert len(violations) == 1
    assert "memory_observations" in violations[0]
    assert "no equality or range on a leading index field" in violations[0]


def test_guard_flags_an_unbounded_list(store, query_guard):
    list(store.observations.collection.find({"scope_id": ObjectId()}))
    assert "unbounded list" in query_guard.take()[0]


def test_guard_flags_top_level_or(store, query_guard):
    store.scopes.collection.count_documents({"$or": [{"agent_id": "a"}, {"agent_id": "b"}]})
    assert "$or" in query_guard.take()[0]


def test_guard_flags_unindexed_writes_and_aggregations(store, query_guard):
    store.scopes.collection.update_many({"display_name": "x"}, {"$set": {"is_active": False}})
    list(store.observations.collection.aggregate([{"$match": {"private": True}}, {"$limit": 3}]))
    assert len(query_guard.take()) == 2


def test_guard_lets_served_queries_pass(store, query_guard):
    scope = ScopeFactory.create(store=store)
    list(store.observations.collection.find({"scope_id": ObjectId(scope.id)}).limit(10))
    list(store.observations.collection.find({"_id": {"$in": [ObjectId()]}}))
    list(
        store.observations.collection.find(
            {"scope_id": ObjectId(scope.id), "seq": {"$gt": 0, "$lte": 10}}
        )
    )
    store.scopes.collection.count_documents({"agent_id": "a1", "user_id": "u1"})
    assert query_guard.take() == []
