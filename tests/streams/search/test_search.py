"""Search: ranking from our own index, privacy scoping, and every write keeping the index true."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.core.exceptions import NotFound
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import observation_get
from streams.search.index import search_index_forget, search_observations
from streams.store import MemoryStore
from streams.store.postings import decode_postings, totals_key
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"


def _ids(hits) -> list[str]:
    return [h.observation.content for h in hits]


def test_ranks_by_bm25_with_stemming_and_reports_matched_terms(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="Gene deploys the Rust service.")
    ObservationFactory.create(
        store=store, scope=scope, content="Gene is learning Rust lifetimes and Rust traits."
    )
    ObservationFactory.create(store=store, scope=scope, content="Gene drinks tea every morning.")

    hits = search_observations(store=store, agent_id=AGENT, user_id="u1", query="rust lifetime")

    assert _ids(hits) == [
        "Gene is learning Rust lifetimes and Rust traits.",
        "Gene deploys the Rust service.",
    ]
    assert hits[0].matched_terms == ["rust", "lifetim"]
    assert hits[1].matched_terms == ["rust"]
    assert hits[0].score > hits[1].score > 0
    stemmed = search_observations(store=store, agent_id=AGENT, user_id="u1", query="deploying")
    assert _ids(stemmed) == ["Gene deploys the Rust service."]


def test_stop_words_and_empty_queries_find_nothing(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="The user is what they were.")
    for query in ["", "   ", "the what were", "?!"]:
        assert search_observations(store=store, agent_id=AGENT, user_id="u1", query=query) == []


def test_privacy_individual_only_for_its_user_groups_when_named(store: MemoryStore) -> None:
    mine = ScopeFactory.create(store=store, user_id="u1")
    theirs = ScopeFactory.create(store=store, user_id="u2")
    group = ScopeFactory.create(store=store, group=True, group_id="g1")
    other_group = ScopeFactory.create(store=store, group=True, group_id="g2")
    collective = ScopeFactory.create(store=store, collective=True)
    shard = ScopeFactory.create(store=store, shard=True, name="feedback")
    idle = ScopeFactory.create(store=store, shard=True, name="idle", is_active=False)
    other_agent = ScopeFactory.create(store=store, agent_id="agent-2", collective=True)
    for scope in [mine, theirs, group, other_group, collective, shard, idle, other_agent]:
        label = scope.user_id or scope.group_id or scope.name or scope.agent_id
        ObservationFactory.create(store=store, scope=scope, content=f"kubernetes note of {label}")

    def seen(**kwargs) -> set[str]:
        hits = search_observations(store=store, agent_id=AGENT, query="kubernetes", **kwargs)
        return {h.observation.content.removeprefix("kubernetes note of ") for h in hits}

    assert seen(user_id="u1", group_ids=["g1"]) == {"u1", "g1", "agent-1", "feedback"}
    assert seen() == {"agent-1", "feedback"}
    assert seen(group_ids=["g2"]) == {"g2", "agent-1", "feedback"}
    assert seen(scope_id=theirs.id, user_id="u2") == {"u2"}
    assert seen(scope_id=idle.id) == {"idle"}  # asked for by id, an inactive shard is searched
    with pytest.raises(NotFound):
        seen(scope_id=theirs.id, user_id="u1")
    with pytest.raises(NotFound):
        seen(scope_id=theirs.id)
    with pytest.raises(NotFound):
        seen(scope_id=other_agent.id)
    with pytest.raises(NotFound):
        seen(scope_id="not-an-id")


def test_soft_deleted_observations_leave_search_once(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    gone = ObservationFactory.create(store=store, scope=scope, content="Flight to Kyoto booked.")
    ObservationFactory.create(store=store, scope=scope, content="Hotel in Kyoto booked.")

    observation_delete(store=store, observation=gone)
    observation_delete(store=store, observation=gone)  # stale copy: no double decrement

    hits = search_observations(store=store, agent_id=AGENT, user_id="u1", query="kyoto flight")
    assert _ids(hits) == ["Hotel in Kyoto booked."]
    totals = store.search_index.collection.find_one({"_id": totals_key(ObjectId(scope.id))})
    assert totals["docs"] == 1


def test_content_change_reindexes(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    observation = ObservationFactory.create(store=store, scope=scope, content="Likes coffee.")

    observation_update(store=store, observation=observation, content="Likes green tea.")

    assert search_observations(store=store, agent_id=AGENT, user_id="u1", query="coffee") == []
    hits = search_observations(store=store, agent_id=AGENT, user_id="u1", query="tea")
    assert _ids(hits) == ["Likes green tea."]
    # Marking it private changes nothing in search (privacy here is about propagation).
    observation_update(store=store, observation=hits[0].observation, private=True)
    assert len(search_observations(store=store, agent_id=AGENT, user_id="u1", query="tea")) == 1


def test_forget_then_hard_delete_leaves_nothing_searchable(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    kept = ObservationFactory.create(store=store, scope=scope, content="Budget is 500 euros.")
    forgotten = ObservationFactory.create(store=store, scope=scope, content="Budget for Lisbon.")
    deleted = ObservationFactory.create(store=store, scope=scope, content="Old Lisbon budget.")
    observation_delete(store=store, observation=deleted)
    deleted = observation_get(store=store, observation_id=deleted.id)

    search_index_forget(store=store, observations=[forgotten, deleted])
    store.observations.collection.delete_many({"_id": {"$in": [ObjectId(forgotten.id)]}})

    assert search_observations(store=store, agent_id=AGENT, user_id="u1", query="lisbon") == []
    hits = search_observations(store=store, agent_id=AGENT, user_id="u1", query="budget")
    assert [h.observation.id for h in hits] == [kept.id]
    totals = store.search_index.collection.find_one({"_id": totals_key(ObjectId(scope.id))})
    assert totals["docs"] == 1
    assert totals["length"] == 3  # "budget", "500", "euro"
    lisbon = store.search_index.collection.find_one({"_id": f"{scope.id}:lisbon"})
    assert lisbon["df"] == 0 and decode_postings(lisbon) == []


def test_limit_bounds_the_answer(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    for n in range(8):
        ObservationFactory.create(store=store, scope=scope, content=f"Standup note {n}")
    hits = search_observations(store=store, agent_id=AGENT, user_id="u1", query="standup", limit=3)
    assert len(hits) == 3
    # Equal scores: the newest first.
    assert _ids(hits) == ["Standup note 7", "Standup note 6", "Standup note 5"]
