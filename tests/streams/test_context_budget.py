"""`max_tokens`: the context fits, dropping retrieved observations first, then recent ones,
then shard sections; the user's own consolidation only ever loses whole sentences."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest
from bson import ObjectId

from streams.context.assemble import context_assemble
from streams.context.tokens import estimate_tokens
from streams.memory.consolidation import consolidation_edit
from streams.memory.scopes import scope_get
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"
USER_TEXT = " ".join(f"Gene told us fact number {n} about the Rust parser." for n in range(30))
SECTIONS = ("user", "group", "collective", "shard")
MIXES = [
    mix for size in range(1, len(SECTIONS) + 1) for mix in itertools.combinations(SECTIONS, size)
]


def _edit(store: MemoryStore, scope, text: str) -> None:
    fresh = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(
        store=store, scope=fresh, text=text, expected_version=fresh.consolidation_version, actor="t"
    )


def _memory(store: MemoryStore, mix: tuple[str, ...]) -> None:
    """Long consolidations, many pending observations and old ones retrieval can find."""
    made = {
        "user": lambda: ScopeFactory.create(store=store, user_id="u1", display_name="Gene"),
        "group": lambda: ScopeFactory.create(store=store, group=True, group_id="g1"),
        "collective": lambda: ScopeFactory.create(store=store, collective=True),
        "shard": lambda: ScopeFactory.create(store=store, shard=True, name="feedback"),
    }
    for kind in mix:
        scope = made[kind]()
        _edit(store, scope, USER_TEXT if kind == "user" else f"The {kind} memory. " * 60)
        for n in range(8):  # old: consolidated, only retrieval finds them
            ObservationFactory.create(store=store, scope=scope, content=f"Rust parser note {n}")
        store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})
        for n in range(12):
            ObservationFactory.create(store=store, scope=scope, content=f"{kind} pending {n} " * 5)


@pytest.mark.parametrize("mix", MIXES, ids=["+".join(m) for m in MIXES])
def test_a_200_token_budget_holds_for_every_scope_mix(
    store: MemoryStore, mix: tuple[str, ...]
) -> None:
    _memory(store, mix)
    kwargs = {"store": store, "agent_id": AGENT, "user_id": "u1", "groups": [("g1", None)]}
    message = "Do you remember what I said about the Rust parser?"
    full = context_assemble(**kwargs, message=message)
    assert full.tokens > 200 and full.decision.triggered and full.hits

    fitted = context_assemble(**kwargs, message=message, max_tokens=200)

    assert fitted.tokens == estimate_tokens(fitted.xml) <= 200
    ET.fromstring(fitted.xml)  # still well-formed
    assert fitted.dropped
    kinds = [d.split(":")[0] for d in fitted.dropped]
    order = ["retrieved", "recent", "shard", "collective", "group", "user"]
    assert kinds == sorted(kinds, key=order.index)  # never a later kind before an earlier one
    assert fitted.hits == []  # every retrieved observation went first
    if "user" in mix and "<UserMemory" in fitted.xml:
        kept = ET.fromstring(fitted.xml).find("UserMemory").text.strip()
        assert USER_TEXT.startswith(kept) and kept.endswith(".")  # whole sentences only


def test_retrieved_observations_go_first_and_the_answer_says_which(store: MemoryStore) -> None:
    _memory(store, ("user", "group"))
    kwargs = {"store": store, "agent_id": AGENT, "user_id": "u1", "groups": [("g1", None)]}
    message = "Do you remember what I said about the Rust parser?"
    full = context_assemble(**kwargs, message=message)
    budget = full.tokens - 1  # one retrieved observation less is enough

    fitted = context_assemble(**kwargs, message=message, max_tokens=budget)

    assert fitted.dropped == [f"retrieved:{full.hits[-1].observation.id}"]
    assert [h.observation.id for h in fitted.hits] == [h.observation.id for h in full.hits[:-1]]
    assert fitted.tokens <= budget


def test_recent_ones_go_before_shards_oldest_first(store: MemoryStore) -> None:
    _memory(store, ("user", "shard"))
    kwargs = {"store": store, "agent_id": AGENT, "user_id": "u1"}
    full = context_assemble(**kwargs, message="hello")
    assert "<Shard" in full.xml and "shard pending 11" in full.xml
    without_recent = full.tokens - 150  # some of the 15 recent ones

    fitted = context_assemble(**kwargs, message="hello", max_tokens=without_recent)

    assert {d.split(":")[0] for d in fitted.dropped} == {"recent"}
    assert "<Shard" in fitted.xml
    assert "shard pending 7" not in fitted.xml  # the shard's oldest shown went first


def test_no_budget_or_a_roomy_one_changes_nothing(store: MemoryStore) -> None:
    _memory(store, ("user",))
    kwargs = {"store": store, "agent_id": AGENT, "user_id": "u1", "message": "hello"}
    full = context_assemble(**kwargs)
    roomy = context_assemble(**kwargs, max_tokens=full.tokens)
    assert roomy.xml == full.xml and roomy.dropped == [] and full.dropped == []


def test_a_tiny_budget_leaves_an_empty_context_rather_than_half_a_sentence(
    store: MemoryStore,
) -> None:
    _memory(store, ("user",))
    fitted = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", message="hello", max_tokens=16
    )
    assert fitted.xml == "<MemoryContext>\n</MemoryContext>"
    assert fitted.dropped[-1] == "user"
