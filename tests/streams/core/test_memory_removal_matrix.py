"""One way out (issue 37, 2): `memory_removal` is the one rule every surface reads. Each
removal reason (deleted, expired, held in review, private in a shared scope, forgotten)
against each memory surface (context, search) and the staff rule (`shown`, which API
answers, UI pages and exports render): the state is set directly on the stored
document, with the search index left as it was, so only the read-side rule can hide it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from streams.context.assemble import context_assemble
from streams.core.documents import utcnow
from streams.core.visibility import memory_removal, shown
from streams.memory.observations import observation_add, observation_get
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.search.index import search_observations
from streams.store import MemoryStore

AGENT = "agent-1"
REASONS = ("deleted", "expired", "held", "private")
STATES = {
    "deleted": {"deleted_at": utcnow()},
    "expired": {"expires_at": utcnow() - timedelta(minutes=1)},
    "held": {"review_status": "in_review", "review": {"reasons": ["flag:instruction"]}},
    "private": {"private": True},
}


def _world(store: MemoryStore) -> dict[str, str]:
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"))
    ids = {}
    for reason in (*REASONS, "kept"):
        o = observation_add(
            store=store, scope=group, content=f"Remember zq{reason}x: the team likes tea."
        )
        ids[reason] = o.id
    for reason, fields in STATES.items():
        store.observations.update_fields(ObjectId(ids[reason]), fields, scope_id=ObjectId(group.id))
    return ids


@pytest.mark.parametrize("reason", REASONS)
def test_context_leaves_out_every_removal(store: MemoryStore, reason: str):
    _world(store)
    xml = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", groups=[("g1", "Team")],
        message="what does the team like? zqkeptx",
    ).xml  # fmt: skip
    assert "zqkeptx" in xml
    assert f"zq{reason}x" not in xml


@pytest.mark.parametrize("reason", REASONS)
def test_search_leaves_out_every_removal(store: MemoryStore, reason: str):
    _world(store)
    hits = search_observations(
        store=store, agent_id=AGENT, query=f"tea zq{reason}x zqkeptx", group_ids=["g1"],
        limit=20, record_access=False,
    )  # fmt: skip
    found = " ".join(h.observation.content for h in hits)
    assert "zqkeptx" in found
    assert f"zq{reason}x" not in found


@pytest.mark.parametrize(
    "reason,staff_sees",
    [("deleted", False), ("expired", False), ("held", True), ("private", True)],
)
def test_the_staff_rule_is_the_same_rule(store: MemoryStore, reason: str, staff_sees: bool):
    """Staff surfaces (API answers, UI pages, exports) list held and private items (the
    review queue, marked private); deleted and expired ones without their words."""
    ids = _world(store)
    o = observation_get(store=store, observation_id=ids[reason])
    assert (shown(o).text is not None) is staff_sees
    memory = memory_removal(o, shared_section=True)
    assert memory == reason


def test_a_forgotten_user_named_by_an_observation_is_removed_for_memory(store: MemoryStore):
    ids = _world(store)
    o = observation_get(store=store, observation_id=ids["kept"])
    o.related_user_ids = ["gene"]
    assert memory_removal(o, forgotten=frozenset({"gene"})) == "forgotten"
    assert memory_removal(o, forgotten=frozenset({"ada"})) is None
