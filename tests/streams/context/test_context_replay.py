"""Replay (`as_of`): the context as it was then, from history; never what support removed.

The world of tests/streams/memory/test_derived_memory.py: the fake model echoes its prompt as the
consolidation, so an observation's text is in every version that absorbed it.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from streams.context.assemble import context_assemble
from streams.context.replay import context_replay
from streams.core.documents import utcnow
from streams.core.exceptions import InvalidInput
from streams.memory.consolidation import consolidation_edit
from streams.memory.scopes import scope_get
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory
from tests.streams.memory.test_derived_memory import (
    AGENT,
    NEW,
    OLD,
    act,
    add,
    consolidate,
    seed_secret,
    world,
)

__all__ = ["world"]  # a fixture, imported for this module
SECRET = "zanzibar"


def _moment() -> object:
    """A time strictly between what was written before and what is written after."""
    time.sleep(0.005)
    at = utcnow()
    time.sleep(0.005)
    return at


def _replay(store: MemoryStore, at, user: str = "u1", message: str = "hello") -> str:
    return context_replay(
        store=store,
        agent_id=AGENT,
        user_id=user,
        groups=[("g1", "Eden Team")],
        message=message,
        as_of=at,
    ).xml


def test_replay_before_and_after_a_hand_edit_shows_each_version_then(
    store: MemoryStore, world: dict[str, str]
) -> None:
    group = scope_get(store=store, scope_id=world["group"])
    before = _moment()
    consolidation_edit(
        store=store,
        scope=group,
        text="The team deploys on Tuesdays.",
        expected_version=group.consolidation_version,
        actor="operator",
    )
    after = _moment()

    assert "The team deploys on Fridays." in _replay(store, before)
    assert "Tuesdays" not in _replay(store, before)
    assert "The team deploys on Tuesdays." in _replay(store, after)


def test_an_observation_pending_then_is_recent_then_and_absorbed_now(
    store: MemoryStore, world: dict[str, str]
) -> None:
    add(store, world["individual"], "Gene adopted a cat named Tom.", "u1")
    pending_then = _moment()
    consolidate(store, world["individual"])

    then = _replay(store, pending_then)
    now = context_assemble(store=store, agent_id=AGENT, user_id="u1", message="hello").xml

    assert "<RecentObservations>" in then and "- Gene adopted a cat named Tom." in then
    assert "- Gene adopted a cat named Tom." not in now  # absorbed: in the consolidation
    assert "Gene adopted a cat named Tom." in now


def test_nothing_created_after_the_time_shows(store: MemoryStore, world: dict[str, str]) -> None:
    early = _moment()
    add(store, world["group"], "The team moved to Lisbon.", "u2")
    assert "Lisbon" not in _replay(store, early)
    assert "Lisbon" in _replay(store, _moment())


@pytest.mark.parametrize("action", ["delete", "edit", "private", "forget_user"])
@pytest.mark.parametrize("reader", ["u1", "u2"])
def test_replay_never_resurrects_what_support_removed(
    store: MemoryStore, world: dict[str, str], action: str, reader: str
) -> None:
    secret = seed_secret(store, world, "individual")
    then = _moment()
    question = "Do you remember where Gene kiteboards?"
    before = _replay(store, then, user=reader, message=question).lower()
    if reader == "u1":
        assert SECRET in before  # it was there, then

    act(store, action, secret, world)

    after = _replay(store, then, user=reader, message=question)
    assert SECRET not in after.lower()
    if action == "edit" and reader == "u1":
        assert NEW in after  # the corrected text is what replay shows
    if action in ("delete", "edit", "private") and reader == "u1":
        # The versions that held it are redacted: what else they absorbed still shows.
        assert "Gene likes short answers." in after
    if action == "forget_user" and reader == "u1":
        assert "<UserMemory" not in after
    assert OLD not in after


def test_a_future_time_or_one_before_the_agent_is_refused(
    store: MemoryStore, world: dict[str, str]
) -> None:
    with pytest.raises(InvalidInput, match="future"):
        _replay(store, utcnow() + timedelta(minutes=5))
    with pytest.raises(InvalidInput, match="before the agent existed"):
        _replay(store, utcnow() - timedelta(days=400))
    with pytest.raises(InvalidInput, match="before the agent existed"):
        context_replay(store=store, agent_id="nobody", user_id="u1", message="hi", as_of=utcnow())


def test_replay_keeps_a_budget(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u1")
    for n in range(20):
        ObservationFactory.create(store=store, scope=scope, content=f"Gene note number {n}. " * 4)
    result = context_replay(
        store=store, agent_id=AGENT, user_id="u1", message="hi", as_of=_moment(), max_tokens=100
    )
    assert result.tokens <= 100 and result.dropped and result.call_id is None
