"""An add's window, kept per process (`streams.memory.window`): every change of a stored
observation's text or liveness moves its scope's log revision, so the next add, in this
process or another, compares the new text with what the log holds now, never with a
text that was edited, deleted, merged, moved, purged or forgotten.

Each case adds "Ada lives in Porto." (kept in this process's window by the add), changes
it one way, then adds "Ada lives in Lisbon.": without the revision the kept window would
still hold Porto and flag a contradiction. The suite's `window.CHECK` also compares every
reuse with a fresh read, so a path that forgot `bump_log_rev` fails with `StaleWindow`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.observations import do_observation_merge
from streams.actions.sweeps import do_retention_apply
from streams.core.documents import Observation, Scope
from streams.guard.review import review_decide
from streams.jobs import job_create, job_execute
from streams.llm.offline import OfflineProvider
from streams.memory import window
from streams.memory.bulk import BulkFilter, bulk_match, bulk_target
from streams.memory.bulk_job import bulk_payload, bulk_run
from streams.memory.consolidation import consolidation_commit
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.people.privacy import forget_user_request, forget_user_run
from streams.store import MemoryStore
from tests.factories import ScopeFactory

AGENT = "agent-1"
OLD, NEW = "Ada lives in Porto.", "Ada lives in Lisbon."
SCOPE_TYPES = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def _scope(store: MemoryStore, kind: str) -> Scope:
    return ScopeFactory.create(store=store, agent_id=AGENT, **SCOPE_TYPES[kind])


def _fresh(store: MemoryStore, scope: Scope) -> Scope:
    return scope_get(store=store, scope_id=scope.id)


def _told_porto(store: MemoryStore, scope: Scope) -> Observation:
    """Porto, then a second add: the second one reuses the window the first one left."""
    old = observation_add(store=store, scope=scope, content=OLD)
    observation_add(store=store, scope=_fresh(store, scope), content="Ada plays the cello.")
    return old


def _edit(store: MemoryStore, scope: Scope, old: Observation) -> None:
    observation_update(store=store, observation=old, content="Ada reads poetry at night.")


def _delete(store: MemoryStore, scope: Scope, old: Observation) -> None:
    observation_delete(store=store, observation=old)


def _merge(store: MemoryStore, scope: Scope, old: Observation) -> None:
    keep = observation_add(store=store, scope=_fresh(store, scope), content="Ada lived in Porto.")
    do_observation_merge(store=store, actor=Actor.api("k"), keep=keep, drop=old)


CHANGES: dict[str, Callable[[MemoryStore, Scope, Observation], None]] = {
    "edit": _edit,
    "delete": _delete,
    "merge": _merge,
}


@pytest.mark.parametrize("kind", SCOPE_TYPES)
def test_unchanged_the_kept_window_still_flags_the_contradiction(store, kind):
    """The baseline the cases below depart from: nothing changed, Lisbon contradicts
    Porto, and in a shared scope it waits for review."""
    scope = _scope(store, kind)
    old = _told_porto(store, scope)
    new = observation_add(store=store, scope=_fresh(store, scope), content=NEW)
    assert new.contradicts == [old.id]
    assert new.review_status == (None if kind == "individual" else "in_review")


@pytest.mark.django_db  # a merge queues its follow-up job on commit
@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("kind", SCOPE_TYPES)
@pytest.mark.parametrize("read", ["fresh", "stale"])
def test_a_change_moves_the_revision_and_the_next_add_compares_with_what_the_log_holds(
    store, kind, change, read
):
    """`read`: the add gets the scope as read after the change, or as read before it (a
    request that read the scope an instant before another process changed the log): its
    claim at the old revision misses and the retry reads the window again."""
    scope = _scope(store, kind)
    old = _told_porto(store, scope)
    before = _fresh(store, scope)
    CHANGES[change](store, scope, old)
    after = _fresh(store, scope)
    assert after.log_rev > before.log_rev

    new = observation_add(store=store, scope=after if read == "fresh" else before, content=NEW)
    assert new.contradicts == []
    assert new.review_status is None
    assert new.seq == after.observation_seq + 1


def test_a_bulk_delete_moves_the_revision(store):
    scope = _scope(store, "group")
    old = _told_porto(store, scope)
    _run_bulk(store, BulkFilter(scope_id=scope.id, q="porto"), "delete")
    new = observation_add(store=store, scope=_fresh(store, scope), content=NEW)
    assert store.observations.get(ObjectId(old.id)).deleted
    assert new.contradicts == []


def test_a_bulk_move_moves_the_source_revision_and_the_target_tops_up(store):
    """Porto leaves the group's log for Ada's own: the group no longer compares with it,
    and Ada's scope, whose window this process kept, finds it among what came since."""
    group = _scope(store, "group")
    ada, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "ada"))
    observation_add(store=store, scope=ada, content="Ada keeps bees.")
    old = _told_porto(store, group)
    _run_bulk(store, BulkFilter(scope_id=group.id, q="porto"), "move", target=ada.id)

    in_group = observation_add(store=store, scope=_fresh(store, group), content=NEW)
    in_ada = observation_add(store=store, scope=_fresh(store, ada), content=NEW)
    assert in_group.contradicts == []
    assert in_ada.contradicts == [old.id]


def test_forgetting_a_user_moves_the_revision_of_the_shared_scopes_that_held_her(store):
    group = _scope(store, "group")
    old = observation_add(store=store, scope=group, content=OLD, related_user_ids=["ada"])
    observation_add(store=store, scope=_fresh(store, group), content="The team meets Fridays.")
    job = forget_user_request(store=store, agent_id=AGENT, user_id="ada", actor="cli")
    work = lambda run: forget_user_run(store=store, run=run)  # noqa: E731
    job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)

    assert store.observations.get(ObjectId(old.id)) is None
    new = observation_add(store=store, scope=_fresh(store, group), content=NEW)
    assert new.contradicts == []


def test_a_retention_purge_moves_the_revision(store):
    scope = _scope(store, "group")
    old = _told_porto(store, scope)
    fresh = _fresh(store, scope)
    consolidation_commit(
        store=store, scope=fresh, expected_version=0, text="Ada lives in Porto.",
        absorbed_ids=[old.id], trigger="manual", actor=None,
    )  # fmt: skip
    store.scopes.update_fields(ObjectId(scope.id), {"max_observations": 1})
    assert do_retention_apply(store=store, scope=_fresh(store, scope)).purged == 1

    assert store.observations.get(ObjectId(old.id)) is None
    new = observation_add(store=store, scope=_fresh(store, scope), content=NEW)
    assert new.contradicts == []


def test_an_approval_that_edits_the_text_moves_the_revision(store):
    """A held observation is in the window (it is stored, only not yet pending): a person
    approving it with other words changes the text the next add compares with."""
    scope = _scope(store, "group")
    store.scopes.update_fields(ObjectId(scope.id), {"review_mode": "all"})
    held = observation_add(store=store, scope=_fresh(store, scope), content=OLD, actor="api:k")
    observation_add(store=store, scope=_fresh(store, scope), content="Ada plays the cello.")
    assert held.review_status == "in_review"
    before = _fresh(store, scope)
    review_decide(
        store=store,
        observation=store.observations.get(ObjectId(held.id)),
        decision="approve",
        actor="ui:ops",
        content="Ada reads poetry at night.",
    )
    assert _fresh(store, scope).log_rev > before.log_rev
    new = observation_add(store=store, scope=_fresh(store, scope), content=NEW)
    assert new.contradicts == []


def test_a_write_that_does_not_move_the_revision_is_caught(store):
    """The safety net itself: a text changed behind the repositories' back (no
    `bump_log_rev`) makes the next reuse of the kept window fail loudly in the suite."""
    scope = _scope(store, "group")
    old = _told_porto(store, scope)
    store.observations.collection.update_one(
        {"_id": ObjectId(old.id)}, {"$set": {"content": "Ada reads poetry at night."}}
    )
    with pytest.raises(window.StaleWindow):
        observation_add(store=store, scope=_fresh(store, scope), content=NEW)


def test_a_scope_stored_before_the_revision_existed_claims_at_revision_zero(store):
    scope = _scope(store, "group")
    store.scopes.collection.update_one({"_id": ObjectId(scope.id)}, {"$unset": {"log_rev": ""}})
    old = _told_porto(store, scope)
    new = observation_add(store=store, scope=_fresh(store, scope), content=NEW)
    assert new.contradicts == [old.id]
    assert _fresh(store, scope).observation_seq == 3


def test_a_second_process_reads_only_what_it_lacks(store, monkeypatch):
    """Another process (its own cache) reads the whole window once; this one, which kept
    its window, reads only the observations the other added since."""
    scope = _scope(store, "group")
    observation_add(store=store, scope=scope, content="Ada plays the cello.")
    mine = window.WINDOWS
    other = window.WindowCache()
    monkeypatch.setattr(window, "WINDOWS", other)
    monkeypatch.setattr("streams.memory.observations.WINDOWS", other)
    porto = observation_add(store=store, scope=_fresh(store, scope), content=OLD)
    monkeypatch.setattr("streams.memory.observations.WINDOWS", mine)

    fresh = _fresh(store, scope)
    kept = mine.read(store=store, scope=fresh, session=None)
    assert [text for _, _, text in kept.entries] == [OLD, "Ada plays the cello."]
    assert kept.sent  # the one observation added since, read
    assert porto.seq == fresh.observation_seq


CELLO = "Ada plays the cello."


@pytest.mark.parametrize("bounds", [{"max_scopes": 2}, {"max_chars": 2 * len(CELLO)}])
def test_the_cache_keeps_at_most_its_bound_of_scopes_and_text(store, bounds):
    """The least recently used windows go first, past either bound."""
    cache = window.WindowCache(**bounds)
    scopes = [_scope(store, "group") for _ in range(3)]
    for scope in scopes:
        observation_add(store=store, scope=scope, content=CELLO)
        cache.read(store=store, scope=_fresh(store, scope), session=None)
    assert [key[1] for key in cache._kept] == [s.id for s in scopes[-2:]]
    assert cache._chars == sum(w.chars for w in cache._kept.values())
    cache.forget_database(store.db.name)
    assert (cache._kept, cache._chars) == ({}, 0)


def _run_bulk(
    store: MemoryStore, bulk_filter: BulkFilter, action: str, target: str | None = None
) -> None:
    aim = bulk_target(store=store, agent_id=AGENT, action=action, target_scope_id=target)
    match = bulk_match(
        store=store, agent_id=AGENT, bulk_filter=bulk_filter, action=action, target=aim
    )
    assert match.matched == 1
    payload = bulk_payload(
        bulk_filter=bulk_filter, action=action, target=aim, match=match, batch_size=10
    )
    job = job_create(store=store, kind="bulk", agent_id=AGENT, actor="cli", payload=payload)
    work = lambda run: bulk_run(store=store, run=run)  # noqa: E731
    job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
