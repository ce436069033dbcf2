"""Retention across scope types: a scope's `max_observations` purges its oldest
consolidated observations beyond the cap, never pending, pinned or rebuild-pending ones,
never while a consolidation run holds the scope's lease, audited, and without touching
the consolidation text (records only)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from streams.actions.sweeps import do_retention_apply, do_retention_sweep
from streams.core.documents import Scope, utcnow
from streams.core.exceptions import InvalidInput
from streams.guard.screening import screened
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add, observation_list
from streams.memory.scopes import scope_get, scope_update
from streams.records.audit import audit_page
from streams.search.index import search_in_scopes
from streams.store import MemoryStore
from tests.factories import ScopeFactory

TRAITS = [{}, {"group": True}, {"collective": True}, {"shard": True}]


def log_contents(store: MemoryStore, scope: Scope) -> list[str]:
    fresh = scope_get(store=store, scope_id=scope.id)
    items = observation_list(store=store, scope=fresh, limit=100).items
    return sorted(o.content for o in items)


def seeded(store: MemoryStore, traits: dict) -> tuple[Scope, list[str]]:
    """12 consolidated observations (the first pinned by its text), then 3 pending."""
    scope = ScopeFactory.create(store=store, agent_id="a1", **traits)
    texts = [f"Fact number {n} about the harbour crane {n * 7}" for n in range(1, 16)]
    first = [observation_add(store=store, scope=scope, content=t) for t in texts[:12]]
    scope = scope_get(store=store, scope_id=scope.id)
    consolidation_commit(
        store=store, scope=scope, expected_version=0, text="Twelve facts about cranes.",
        absorbed_ids=[o.id for o in first], trigger="threshold", actor=None,
    )  # fmt: skip
    for text in texts[12:]:
        observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content=text)
    store.scopes.set_pins(ObjectId(scope.id), [screened(texts[0] + ".")])  # as a pin is stored
    return scope_get(store=store, scope_id=scope.id), texts


@pytest.mark.parametrize("traits", TRAITS, ids=["individual", "group", "collective", "shard"])
def test_retention_keeps_pending_and_pinned_and_purges_the_oldest_consolidated(
    store: MemoryStore, traits: dict
) -> None:
    scope, texts = seeded(store, traits)
    assert scope.observation_count == 15
    scope = scope_update(store=store, scope=scope, changes={"max_observations": 10}, actor="t")
    before = scope.consolidation

    assert do_retention_sweep(store=store) == 5
    after = scope_get(store=store, scope_id=scope.id)
    # The pinned first one and every pending one stay; the next five oldest go.
    kept = log_contents(store, after)
    assert kept == sorted([texts[0], *texts[6:]])
    assert after.observation_count == 10 and after.retention_purged == 5
    assert after.consolidation == before and after.consolidation_version == 1  # records only
    assert after.pending_count == 3
    # Out of search too.
    hits = search_in_scopes(store=store, scopes=[after], query="harbour crane 14", limit=50)
    assert texts[1] not in [h.observation.content for h in hits]
    entry = audit_page(store=store, action="scope.purge_retention", limit=5).items[0]
    assert entry.object_id == scope.id and entry.summary["purged"] == 5
    # Within the cap: a second pass does nothing.
    assert do_retention_sweep(store=store) == 0


def test_retention_never_purges_pending_even_far_over_the_cap(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, agent_id="a1", consolidation_threshold=1000)
    for n in range(14):
        observation_add(store=store, scope=scope, content=f"Pending fact {n} about ropes")
    scope = scope_update(
        store=store, scope=scope_get(store=store, scope_id=scope.id),
        changes={"max_observations": 10}, actor="t",
    )  # fmt: skip
    assert do_retention_apply(store=store, scope=scope).purged == 0
    assert scope_get(store=store, scope_id=scope.id).observation_count == 14


def test_retention_waits_while_a_consolidation_run_holds_the_lease(store: MemoryStore) -> None:
    scope, _ = seeded(store, {})
    scope = scope_update(store=store, scope=scope, changes={"max_observations": 10}, actor="t")
    now = utcnow()
    oid = ObjectId(scope.id)
    assert store.scopes.acquire_lease(oid, owner="job-1", now=now, until=now + timedelta(minutes=5))
    held = do_retention_apply(store=store, scope=scope)
    assert held.purged == 0 and "holds" in (held.note or "")
    assert scope_get(store=store, scope_id=scope.id).observation_count == 15
    store.scopes.release_lease(oid, owner="job-1")
    assert do_retention_apply(store=store, scope=scope).purged == 5


@pytest.mark.parametrize("value", [0, 9, 1_000_001, "10", 10.5, True])
def test_a_bad_cap_is_refused(store: MemoryStore, value: object) -> None:
    scope = ScopeFactory.create(store=store, agent_id="a1")
    with pytest.raises(InvalidInput) as caught:
        scope_update(store=store, scope=scope, changes={"max_observations": value}, actor="t")
    assert caught.value.details == [{"field": "max_observations"}]


def test_the_cap_turns_off_with_none(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, agent_id="a1")
    on = scope_update(store=store, scope=scope, changes={"max_observations": 20}, actor="t")
    assert on.max_observations == 20
    off = scope_update(store=store, scope=on, changes={"max_observations": None}, actor="t")
    assert off.max_observations is None
    assert store.scopes.with_retention(after=None, limit=10) == []
