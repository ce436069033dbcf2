"""Expiry across scope types: an expired fact leaves context and search at once, and the
consolidation (and the propagated copies) at the sweep; the sweep purges it after the
keep days, and a sweep run twice (or resumed) does no work twice.

The world and the echoing fake model are those of test_derived_memory: anything sent to
a consolidation call shows up in its text.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from streams.actions.sweeps import do_expiry_sweep
from streams.context.assemble import context_assemble
from streams.core.documents import Job, utcnow
from streams.core.exceptions import Conflict, InvalidInput
from streams.memory.observation_batch import BatchItem, observation_batch_add
from streams.memory.observation_changes import observation_update
from streams.memory.observations import observation_add, observation_get
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.records.audit import audit_page
from streams.search.index import search_observations
from streams.store import MemoryStore
from tests.streams.memory.test_derived_memory import (
    AGENT,
    OLD,
    ROOMY,
    add,
    consolidate,
    drain,
    responder,
    seed_secret,
)

ORIGINS = ["individual", "group", "collective", "shard"]
KEEP_DAYS = 7


@pytest.fixture
def world(store: MemoryStore, fake_openai) -> dict[str, str]:
    """The scopes of test_derived_memory (individual, group, collective, shard), each
    with a clean first version."""
    fake_openai.set_responder(responder)
    eden = [{"id": "g1", "name": "Eden Team"}]
    ids = {}
    for name, key, display in (
        ("individual", ScopeKey.individual(AGENT, "u1"), "Gene"),
        ("group", ScopeKey.group(AGENT, "g1"), "Eden Team"),
        ("collective", ScopeKey.collective(AGENT), None),
        ("shard", ScopeKey.collective(AGENT, "feedback"), None),
    ):
        defaults = {**ROOMY, **({"groups": eden} if key.scope_type == "individual" else {})}
        scope, _ = scope_get_or_create(
            store=store, key=key, display_name=display, defaults=defaults
        )
        ids[name] = scope.id
    for name, text in (
        ("group", "The team deploys on Fridays."),
        ("collective", "Exports need a progress bar."),
        ("shard", "Ada finds exports slow."),
    ):
        add(store, ids[name], text, "u2")
        consolidate(store, ids[name])
    return ids


def context_of(store: MemoryStore, message: str = "Where does Gene kiteboard?") -> str:
    return context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        groups=[("g1", "Eden Team")],
        message=message,
        log=False,
        record_access=False,
    ).xml


def found(store: MemoryStore, query: str = "kiteboards Zanzibar") -> list[str]:
    hits = search_observations(
        store=store,
        agent_id=AGENT,
        query=query,
        user_id="u1",
        group_ids=["g1"],
        record_access=False,
    )
    return [h.observation.content for h in hits]


def expire_now(store: MemoryStore, observation_id: str) -> None:
    observation = observation_get(store=store, observation_id=observation_id)
    observation_update(
        store=store, observation=observation, expires_at=utcnow() - timedelta(seconds=1)
    )


@pytest.mark.parametrize("origin", ORIGINS)
def test_expired_fact_leaves_search_at_once_and_the_consolidation_at_the_sweep(
    store: MemoryStore, world: dict[str, str], origin: str
) -> None:
    secret = seed_secret(store, world, origin)
    assert OLD in found(store)
    assert "zanzibar" in scope_get(store=store, scope_id=world[origin]).consolidation.lower()

    expire_now(store, secret.id)
    assert OLD not in found(store)  # at once: no job ran
    assert observation_get(store=store, observation_id=secret.id).expired

    result = do_expiry_sweep(store=store, keep_days=KEEP_DAYS)
    assert result.expired >= 1  # and its copies, when the sweep reached them first
    drain(store, result.follow_ups)
    for name in ("individual", "group", "collective", "shard"):
        text = scope_get(store=store, scope_id=world[name]).consolidation or ""
        assert "zanzibar" not in text.lower(), name
        assert not scope_get(store=store, scope_id=world[name]).needs_rebuild
    assert "zanzibar" not in context_of(store).lower()
    assert OLD not in found(store)
    # Kept (marked expired) until the keep days have passed, then purged for good.
    assert observation_get(store=store, observation_id=secret.id).expiry_swept
    again = do_expiry_sweep(store=store, keep_days=KEEP_DAYS)
    assert (again.expired, again.purged, again.follow_ups) == (0, 0, [])
    later = do_expiry_sweep(store=store, keep_days=KEEP_DAYS, now=utcnow() + timedelta(days=8))
    assert later.purged == 1
    assert store.observations.get(ObjectId(secret.id)) is None


@pytest.mark.parametrize("origin", ["individual", "group", "collective", "shard"])
def test_pending_expired_fact_leaves_context_at_once(
    store: MemoryStore, world: dict[str, str], origin: str
) -> None:
    scope = scope_get(store=store, scope_id=world[origin])
    soon = observation_add(
        store=store,
        scope=scope,
        content="Gene is in Lisbon until Friday.",
        related_user_ids=["u1"],
        expires_at=utcnow() + timedelta(hours=1),
    )
    assert "Lisbon" in context_of(store, "Is Gene in Lisbon?")
    expire_now(store, soon.id)
    assert "Lisbon" not in context_of(store, "Is Gene in Lisbon?")
    assert "Gene is in Lisbon until Friday." not in found(store, "Gene Lisbon")

    result = do_expiry_sweep(store=store, keep_days=KEEP_DAYS)
    assert result.expired == 1 and result.follow_ups == []  # pending: nothing absorbed it
    scope = scope_get(store=store, scope_id=world[origin])
    assert soon.id not in scope.pending_observation_ids
    # A consolidation after it never folds it in.
    add(store, world[origin], "Gene took up surfing.", "u1")
    consolidate(store, world[origin])
    assert (
        "lisbon" not in (scope_get(store=store, scope_id=world[origin]).consolidation or "").lower()
    )
    # The same fact may be told again once its expired copy is handled.
    again = observation_add(
        store=store, scope=scope, content="Gene is in Lisbon until Friday.", related_user_ids=["u1"]
    )
    assert not again.duplicate and again.id != soon.id


def test_a_sweep_resumed_after_a_crash_does_no_work_twice(
    store: MemoryStore, world: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = [seed_secret(store, world, "individual")]
    for text in ("Gene owns a red kite.", "Gene rents a van."):
        secrets.append(add(store, world["individual"], text, "u1"))
    consolidate(store, world["individual"])
    for secret in secrets:
        expire_now(store, secret.id)

    from streams.actions.base import system_audit
    from streams.memory.lifecycle import SWEEP_ACTOR, expiry_sweep

    real = system_audit(store, SWEEP_ACTOR)
    calls = {"n": 0}

    def dies_on_second(**kwargs):  # the process dies while claiming the second one
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("killed")
        return real(**kwargs)

    with pytest.raises(RuntimeError):
        expiry_sweep(store=store, audit=dies_on_second, keep_days=KEEP_DAYS)
    documents_before = store.search_index.read([ObjectId(world["individual"])], [])[0][0].documents
    resumed = do_expiry_sweep(store=store, keep_days=KEEP_DAYS)
    assert resumed.expired == 2  # the first was handled before the crash, not again
    # Only the two left were taken out of search: no count went down twice.
    documents_after = store.search_index.read([ObjectId(world["individual"])], [])[0][0].documents
    assert documents_after == documents_before - 2
    drain(store, resumed.follow_ups)
    entries = audit_page(store=store, action="observation.expire", limit=10).items
    assert sorted(e.object_id for e in entries) == sorted(s.id for s in secrets)
    assert all(observation_get(store=store, observation_id=s.id).expiry_swept for s in secrets)


def test_expires_at_in_the_past_is_refused_on_create_and_batch(
    store: MemoryStore, world: dict[str, str]
) -> None:
    scope = scope_get(store=store, scope_id=world["individual"])
    with pytest.raises(InvalidInput):
        observation_add(
            store=store, scope=scope, content="x y z", expires_at=utcnow() - timedelta(minutes=1)
        )
    with pytest.raises(InvalidInput) as caught:
        observation_batch_add(
            store=store,
            scope=scope,
            items=[
                BatchItem(content="a b", client_id="1"),
                BatchItem(content="c d", client_id="2", expires_at=utcnow() - timedelta(days=1)),
            ],
        )
    assert caught.value.details == [{"field": "items.1.expires_at"}]


def test_an_expiry_handled_by_the_sweep_cannot_be_changed(
    store: MemoryStore, world: dict[str, str]
) -> None:
    scope = scope_get(store=store, scope_id=world["individual"])
    soon = observation_add(
        store=store,
        scope=scope,
        content="Gene waits for a parcel.",
        expires_at=utcnow() + timedelta(hours=1),
    )
    expire_now(store, soon.id)
    jobs: list[Job] = []
    do_expiry_sweep(store=store, keep_days=KEEP_DAYS)
    handled = observation_get(store=store, observation_id=soon.id)
    with pytest.raises(Conflict):
        observation_update(store=store, observation=handled, expires_at=None, follow_ups=jobs)
