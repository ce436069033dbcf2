"""Context assembly: the spec's XML, escaping, freshness, retrieval, and round trips per call."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest
from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter
from streams.context.assemble import context_assemble
from streams.context.render import relative_age
from streams.core.documents import utcnow
from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_get
from streams.store import MemoryStore
from tests.conftest import QUERY_GUARD
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory, edit_consolidation

AGENT = "agent-1"


@pytest.fixture
def memory(store: MemoryStore) -> dict:
    """One user in one group, with collective memory, an active and an inactive shard."""
    user = ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    group = ScopeFactory.create(store=store, group=True, group_id="g1", display_name="Eden")
    collective = ScopeFactory.create(store=store, collective=True)
    shard = ScopeFactory.create(store=store, shard=True, name="feedback")
    idle = ScopeFactory.create(store=store, shard=True, name="idle", is_active=False)
    edit_consolidation(store, user, "Gene prefers short answers.")
    edit_consolidation(store, group, "The team deploys on Fridays.")
    edit_consolidation(store, collective, "Users like examples.")
    edit_consolidation(store, shard, "People ask for dark mode.")
    edit_consolidation(store, idle, "Never shown.")
    return {"user": user, "group": group, "collective": collective, "shard": shard}


def test_xml_has_every_section_in_the_spec_shape(store: MemoryStore, memory: dict) -> None:
    now = utcnow()
    ObservationFactory.create(
        store=store,
        scope=memory["user"],
        content="Moved to Lisbon.",
        observed_at=now - timedelta(hours=2),
    )

    result = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        groups=[("g1", "Eden Team")],
        message="Hello!",
        now=now,
    )

    assert not result.decision.triggered and result.hits == []
    assert result.xml == "\n".join(
        [
            "<MemoryContext>",
            "  <CollectiveMemory>Users like examples.",
            '    <Shard name="feedback">People ask for dark mode.</Shard>',
            "  </CollectiveMemory>",
            '  <GroupMemory group="Eden Team">The team deploys on Fridays.</GroupMemory>',
            '  <UserMemory user="Gene">Gene prefers short answers.',
            "    <RecentObservations>",
            "      - Moved to Lisbon. (2 hours ago)",
            "    </RecentObservations>",
            "  </UserMemory>",
            "</MemoryContext>",
        ]
    )


def test_empty_sections_are_left_out(store: MemoryStore) -> None:
    ScopeFactory.create(store=store, group=True, group_id="g1")  # no consolidation yet
    result = context_assemble(
        store=store, agent_id=AGENT, user_id="new-user", groups=[("g1", None)], message="hi"
    )
    assert result.xml == "<MemoryContext>\n</MemoryContext>"


def test_shards_show_without_collective_text_and_groups_fall_back_to_stored_names(
    store: MemoryStore,
) -> None:
    shard = ScopeFactory.create(store=store, shard=True, name="bugs")
    group = ScopeFactory.create(store=store, group=True, group_id="g9", display_name="Ops")
    edit_consolidation(store, shard, "Crash on export.")
    edit_consolidation(store, group, "On call rota.")
    xml = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", groups=[("g9", None)], message="hi"
    ).xml
    assert '<Shard name="bugs">Crash on export.</Shard>' in xml
    assert '<GroupMemory group="Ops">On call rota.</GroupMemory>' in xml


def test_everything_stored_is_escaped(store: MemoryStore) -> None:
    user = ScopeFactory.create(store=store, user_id="u1", display_name='Evil "</UserMemory>')
    edit_consolidation(store, user, "Likes <b>bold</b> & </UserMemory><Injected>")
    ObservationFactory.create(
        store=store, scope=user, content="</RecentObservations></UserMemory><x a='1'>\x01"
    )
    group = ScopeFactory.create(store=store, group=True, group_id="g1")
    edit_consolidation(store, group, "Team ]]> <![CDATA[ x")

    xml = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        groups=[("g1", 'A"B<C>')],
        message="hi",
    ).xml

    root = ET.fromstring(xml)  # well-formed: nothing stored opened or closed a tag
    assert [child.tag for child in root] == ["GroupMemory", "UserMemory"]
    user_memory = root.find("UserMemory")
    assert user_memory.get("user") == 'Evil "</UserMemory>'
    assert user_memory.text.strip() == "Likes <b>bold</b> & </UserMemory><Injected>"
    assert (
        "</RecentObservations></UserMemory><x a='1'>" in user_memory.find("RecentObservations").text
    )
    assert root.find("GroupMemory").get("group") == 'A"B<C>'


def test_an_operator_edit_shows_in_the_next_call(store: MemoryStore, memory: dict) -> None:
    before = context_assemble(store=store, agent_id=AGENT, user_id="u1", message="hi").xml
    edit_consolidation(store, memory["user"], "Gene now prefers long answers.")
    after = context_assemble(store=store, agent_id=AGENT, user_id="u1", message="hi").xml
    assert "Gene prefers short answers." in before
    assert "Gene now prefers long answers." in after


def test_retrieval_adds_the_top_matches_and_records_access(
    store: MemoryStore, memory: dict
) -> None:
    past = utcnow() - timedelta(weeks=3)
    old = ObservationFactory.create(
        store=store,
        scope=memory["user"],
        content="Gene's Rust book is Zero To Production.",
        observed_at=past,
    )
    shared = ObservationFactory.create(
        store=store,
        scope=memory["group"],
        content="The team chose Rust for the CLI.",
        observed_at=past,
    )
    ObservationFactory.create(
        store=store,
        scope=ScopeFactory.create(store=store, user_id="u2"),
        content="Another user's Rust secret.",
    )
    # Consolidated: no longer in the recent list, only reachable by retrieval.
    for scope in (memory["user"], memory["group"]):
        store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})

    result = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        groups=[("g1", "Eden")],
        message="What did I tell you about Rust?",
    )

    assert result.decision.triggered
    assert result.decision.reason == "recall phrase: what did i tell"
    assert {h.observation.id for h in result.hits} == {old.id, shared.id}
    assert all("rust" in h.matched_terms for h in result.hits)
    assert "<RetrievedObservations>" in result.xml
    assert "Gene's Rust book" in result.xml
    assert "(3 weeks ago)" in result.xml
    assert "secret" not in result.xml
    for hit in result.hits:
        # The access update is sent unacknowledged (w=0): wait for the store to apply it.
        stored = eventually(
            lambda hit=hit: observation_get(store=store, observation_id=hit.observation.id),
            until=lambda o: o.access_count == 1,
        )
        assert stored.access_count == 1 == hit.observation.access_count
        assert stored.last_accessed_at is not None


def test_recent_observations_are_not_retrieved_twice_and_deleted_never_show(
    store: MemoryStore, memory: dict
) -> None:
    recent = ObservationFactory.create(store=store, scope=memory["user"], content="Rust meetup")
    gone = ObservationFactory.create(store=store, scope=memory["user"], content="Rust secret")
    observation_delete(store=store, observation=gone)

    result = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", message="Do you remember the Rust thing?"
    )

    assert result.decision.triggered
    assert result.hits == []
    assert result.xml.count("Rust meetup") == 1
    assert "secret" not in result.xml
    assert recent.id not in {h.observation.id for h in result.hits}


def _counting_store(store: MemoryStore) -> tuple[MemoryStore, CommandCounter]:
    counter = CommandCounter()
    uri = store.client.address
    client = MongoClient(
        host=uri[0], port=uri[1], tz_aware=True, event_listeners=[counter, QUERY_GUARD]
    )
    return MemoryStore(client, store.db.name), counter


@pytest.mark.parametrize("extra_observations", [0, 60])
def test_round_trips_per_call_do_not_grow_with_the_data(
    store: MemoryStore, memory: dict, extra_observations: int
) -> None:
    for n in range(extra_observations):
        ObservationFactory.create(store=store, scope=memory["user"], content=f"Rust note {n}")
    ObservationFactory.create(store=store, scope=memory["group"], content="Rust in the team")
    ObservationFactory.create(store=store, scope=memory["user"], content="Gene likes tea")
    ObservationFactory.create(
        store=store, scope=memory["group"], content="Gene said Rust", source_session_id="s1"
    )
    # Consolidated in the group (not shown as its recent ones): only retrieval finds them.
    store.scopes.update_fields(ObjectId(memory["group"].id), {"pending_observation_ids": []})
    counting, counter = _counting_store(store)
    try:
        counter.reset()
        quiet = context_assemble(
            store=counting, agent_id=AGENT, user_id="u1", groups=[("g1", None)], message="hi"
        )
        without = counter.count
        counter.reset()
        recall = context_assemble(
            store=counting,
            agent_id=AGENT,
            user_id="u1",
            groups=[("g1", None)],
            message="Do you remember what I said about Rust?",
        )
        with_retrieval = counter.count
    finally:
        counting.client.close()
    assert not quiet.decision.triggered and recall.decision.triggered and recall.hits
    assert without == 2  # scopes, recent observations (spec budget: at most 3)
    # + the agent (its ranking settings, read only when retrieval runs), search index, the
    # best candidates, their session neighbours, one batched access update
    assert with_retrieval == 7


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=10), "just now"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(minutes=59), "59 minutes ago"),
        (timedelta(hours=2), "2 hours ago"),
        (timedelta(days=1, hours=5), "1 day ago"),
        (timedelta(days=15), "2 weeks ago"),
        (timedelta(days=65), "2 months ago"),
        (timedelta(days=800), "2 years ago"),
        (-timedelta(seconds=5), "just now"),
        (-timedelta(days=2), "in the future"),
    ],
)
def test_relative_ages(delta: timedelta, text: str) -> None:
    now = utcnow()
    assert relative_age(now - delta, now=now) == text
