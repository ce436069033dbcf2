"""`max_tokens`: the context fits, dropping the collective's and shards' memory first, then
the groups', then the user's own (within each: retrieved, recent, sections); the user's
own consolidation only ever loses whole sentences."""

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


TIERS = {"shard": 0, "collective": 0, "group": 1, "user": 2}
KINDS = ["retrieved", "recent", "shard", "collective", "group", "user"]


def _tier(scope) -> int:
    if scope.is_shard or scope.scope_type == "collective":
        return 0
    return 1 if scope.scope_type == "group" else 2


def _rank(store: MemoryStore, dropped: str) -> tuple[int, int]:
    """Where a dropped part stands in the budget's order: (tier, kind within the tier)."""
    kind, _, rest = dropped.partition(":")
    if kind in ("retrieved", "recent"):
        observation = store.observations.get(ObjectId(rest))
        return _tier(store.scopes.get(ObjectId(observation.scope_id))), KINDS.index(kind)
    return TIERS[kind], KINDS.index(kind) if kind != "collective" else KINDS.index("shard") + 1


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
    # Issue 40: the collective's and shards' memory goes first, then the groups', and the
    # user's own last; within each, retrieved, then recent, then the sections.
    ranks = [_rank(store, d) for d in fitted.dropped]
    assert ranks == sorted(ranks), fitted.dropped  # never a later one before an earlier one
    kept_tiers = {_tier(store.scopes.get(ObjectId(h.observation.scope_id))) for h in fitted.hits}
    dropped_tiers = {rank[0] for rank in ranks}
    assert all(t >= max(dropped_tiers) for t in kept_tiers)  # hits of a dropped tier went
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


def test_a_shards_recent_ones_go_first_oldest_first_and_the_users_stay(
    store: MemoryStore,
) -> None:
    _memory(store, ("user", "shard"))
    kwargs = {"store": store, "agent_id": AGENT, "user_id": "u1"}
    full = context_assemble(**kwargs, message="hello")
    assert "<Shard" in full.xml and "shard pending 11" in full.xml
    without_some = full.tokens - 60  # a few of the shard's recent ones

    fitted = context_assemble(**kwargs, message="hello", max_tokens=without_some)

    assert {d.split(":")[0] for d in fitted.dropped} == {"recent"}
    assert "<Shard" in fitted.xml
    assert "shard pending 7" not in fitted.xml  # the shard's oldest shown went first
    assert "user pending 11" in fitted.xml and "user pending 7" in fitted.xml

    less = context_assemble(**kwargs, message="hello", max_tokens=full.tokens - 400)
    assert "shard:feedback" in less.dropped and "<Shard" not in less.xml
    assert "user pending 11" in less.xml  # the user's own memory outlasts the shard


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
