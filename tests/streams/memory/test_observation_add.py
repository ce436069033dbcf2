"""One add is one transaction: the observation, the scope's log, the agent's counters, the
day's count and the audit entry commit together, also from a scope read a while ago."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.actions import Actor
from streams.actions.observations import do_observation_add, do_observation_add_batch
from streams.core.documents import utcnow
from streams.core.exceptions import NotFound
from streams.memory.observation_batch import BatchItem, observation_batch_add
from streams.memory.observations import observation_add
from tests.factories import ScopeFactory


def _audit(store, action):
    return list(store.audit.collection.find({"action": action}).limit(10))


def _day_count(store, agent_id):
    doc = store.agent_days.on_day([agent_id], utcnow().date()).get(agent_id)
    return doc["observations"] if doc else 0


def test_adds_from_one_stale_scope_read_take_consecutive_sequence_numbers(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")  # read once, never again
    added = [observation_add(store=store, scope=scope, content=f"Fact {n}.") for n in range(3)]

    assert [o.seq for o in added] == [1, 2, 3]
    fresh = store.scopes.get(ObjectId(scope.id))
    assert fresh.observation_seq == 3
    assert fresh.pending_observation_ids == [o.id for o in added]


def test_an_add_with_an_actor_records_its_audit_entry_and_counters(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    before = store.agents.get("a1")

    # Run as the API runs it: audit entries come from actions only (tests/test_audit_writers.py).
    observation = do_observation_add(
        store=store, actor=Actor.api("k"), scope=scope, content="Likes tea."
    )

    entries = _audit(store, "observation.create")
    assert [(e["actor"], e["object_id"]) for e in entries] == [("api:k", observation.id)]
    assert "Likes tea." not in str(entries[0]["summary"])  # a digest, never the text
    after = store.agents.get("a1")
    assert after.observation_count == before.observation_count + 1
    assert after.pending_count == before.pending_count + 1
    assert _day_count(store, "a1") == 1


def test_a_failed_add_records_no_audit_entry_and_counts_nothing(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    store.scopes.collection.delete_one({"_id": ObjectId(scope.id)})  # forgotten meanwhile
    before = store.agents.get("a1")

    with pytest.raises(NotFound):
        observation_add(store=store, scope=scope, content="Likes tea.", actor="api:k")
    with pytest.raises(NotFound):
        observation_batch_add(
            store=store,
            scope=scope,
            items=[BatchItem(content="Likes tea.", client_id="c1")],
            actor="api:k",
        )

    assert store.observations.collection.count_documents({"scope_id": ObjectId(scope.id)}) == 0
    assert _audit(store, "observation.create") == []
    assert _audit(store, "observation.create_batch") == []
    after = store.agents.get("a1")
    assert after.observation_count == before.observation_count
    assert _day_count(store, "a1") == 0


def test_a_batch_resent_records_one_audit_entry_and_counts_once(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    items = [BatchItem(content=f"Fact {n}.", client_id=f"c{n}") for n in range(3)]

    first = do_observation_add_batch(store=store, actor=Actor.api("k"), scope=scope, items=items)
    again = do_observation_add_batch(store=store, actor=Actor.api("k"), scope=scope, items=items)

    assert first.created_count == 3 and again.created_count == 0
    entries = _audit(store, "observation.create_batch")
    assert len(entries) == 1 and entries[0]["summary"]["created"] == 3
    assert store.agents.get("a1").observation_count == 3
    assert _day_count(store, "a1") == 3


def test_concurrent_adds_to_one_agent_are_each_stored_and_counted_once(store):
    """The agent's counters are written inside every add's transaction: adds racing on
    them conflict, are retried, and none is lost or counted twice."""
    from concurrent.futures import ThreadPoolExecutor

    scopes = [ScopeFactory.create(store=store, agent_id="a1") for _ in range(3)]
    before = store.agents.get("a1").observation_count

    def add(n: int) -> str:
        scope = store.scopes.get(ObjectId(scopes[n % 3].id))
        return do_observation_add(
            store=store, actor=Actor.api("t"), scope=scope, content=f"Fact {n}."
        ).id

    with ThreadPoolExecutor(max_workers=4) as pool:
        ids = list(pool.map(add, range(24)))

    assert len(set(ids)) == 24
    stored = store.observations.get_many([ObjectId(i) for i in ids])
    assert len(stored) == 24
    for scope in scopes:
        fresh = store.scopes.get(ObjectId(scope.id))
        seqs = sorted(o.seq for o in stored if o.scope_id == scope.id)
        assert seqs == list(range(1, fresh.observation_seq + 1)) and len(seqs) == 8
    assert store.agents.get("a1").observation_count == before + 24
    assert _day_count(store, "a1") == 24
    assert len(_audit_all(store, "observation.create")) == 24


def _audit_all(store, action):
    return list(store.audit.collection.find({"action": action}).limit(100))
