"""Recent pending observations in the context for groups, the collective and shards, as for
the user: a new team fact is visible before the group consolidates (seed 004 §5.6)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from streams.context.assemble import SHARED_RECENT_LIMIT, context_assemble
from streams.memory.observation_changes import observation_delete
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"


def _context(store: MemoryStore, message: str = "What does my team do on Fridays?"):
    return context_assemble(
        store=store, agent_id=AGENT, user_id="u1", groups=[("g1", "Eden")], message=message
    )


def test_a_new_team_fact_is_in_the_context_before_the_group_consolidates(
    store: MemoryStore,
) -> None:
    ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    group = ScopeFactory.create(store=store, group=True, group_id="g1")
    ObservationFactory.create(store=store, scope=group, content="The team demos on Fridays.")

    root = ET.fromstring(_context(store).xml)

    group_memory = root.find("GroupMemory")
    assert group_memory is not None and group_memory.get("group") == "Eden"
    recent = group_memory.find("RecentObservations")
    assert recent is not None and "The team demos on Fridays. (just now)" in recent.text


def test_the_collective_and_each_shard_show_their_pending_ones(store: MemoryStore) -> None:
    ScopeFactory.create(store=store, user_id="u1")
    collective = ScopeFactory.create(store=store, collective=True)
    shard = ScopeFactory.create(store=store, shard=True, name="feedback")
    ObservationFactory.create(store=store, scope=collective, content="Users like examples.")
    ObservationFactory.create(store=store, scope=shard, content="People ask for dark mode.")

    root = ET.fromstring(_context(store, "hello").xml)

    collective_memory = root.find("CollectiveMemory")
    assert "Users like examples." in collective_memory.find("RecentObservations").text
    shard_memory = collective_memory.find("Shard")
    assert shard_memory.get("name") == "feedback"
    assert "People ask for dark mode." in shard_memory.find("RecentObservations").text


def test_each_shared_section_shows_its_newest_few_and_never_private_or_deleted(
    store: MemoryStore,
) -> None:
    ScopeFactory.create(store=store, user_id="u1")
    group = ScopeFactory.create(store=store, group=True, group_id="g1")
    for n in range(SHARED_RECENT_LIMIT + 3):
        ObservationFactory.create(store=store, scope=group, content=f"Team note {n}.")
    secret = ObservationFactory.create(
        store=store, scope=group, content="Team secret.", private=True
    )
    gone = ObservationFactory.create(store=store, scope=group, content="Team gone.")
    observation_delete(store=store, observation=gone)

    xml = _context(store, "hello").xml

    shown = [n for n in range(SHARED_RECENT_LIMIT + 3) if f"Team note {n}." in xml]
    # the newest SHARED_RECENT_LIMIT pending ids, of which the private one is left out
    assert shown == list(range(3 + 1, SHARED_RECENT_LIMIT + 3))
    assert secret.content not in xml and gone.content not in xml


def test_a_shared_pending_one_is_not_retrieved_twice(store: MemoryStore) -> None:
    ScopeFactory.create(store=store, user_id="u1")
    group = ScopeFactory.create(store=store, group=True, group_id="g1")
    ObservationFactory.create(store=store, scope=group, content="The team chose Rust.")

    result = _context(store, "Search your memory for what the team chose about Rust")

    assert result.decision.reason == "explicit memory request: search your memory"
    assert result.xml.count("The team chose Rust.") == 1
    assert result.hits == []
