"""The persistence layer against the real embedded store."""

from __future__ import annotations

import threading

import pytest

from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import new_id
from streams.memory.consolidation import (
    consolidation_commit,
    consolidation_edit,
    consolidation_history,
    consolidation_restore,
)
from streams.memory.observations import observation_get, observation_list
from streams.memory.scopes import ScopeKey, scope_create, scope_get, scope_get_or_create, scope_list
from tests.factories import ObservationFactory, ScopeFactory


def test_scope_identity_is_unique_and_remembers_display_name(store):
    key = ScopeKey.individual("a1", "u1")
    first, created = scope_get_or_create(store=store, key=key, display_name="Gene")
    again, created_again = scope_get_or_create(store=store, key=key, display_name="Gene K.")
    assert created and not created_again
    assert again.id == first.id
    assert scope_get(store=store, scope_id=first.id).display_name == "Gene K."
    assert store.agents.get("a1").scope_count == 1


def test_concurrent_first_use_creates_one_scope(store):
    key = ScopeKey.group("a1", "g1")
    ids: list[str] = []

    def create() -> None:
        scope, _ = scope_get_or_create(store=store, key=key, display_name="Eden")
        ids.append(scope.id)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1
    assert len(scope_list(store=store, agent_id="a1").items) == 1
    assert store.agents.get("a1").scope_count == 1


def test_explicit_create_of_existing_scope_is_a_conflict(store):
    scope_create(store=store, key=ScopeKey.collective("a1", "feedback"), extraction_prompt="x")
    with pytest.raises(Conflict):
        scope_create(store=store, key=ScopeKey.collective("a1", "feedback"))
    with pytest.raises(InvalidInput):
        scope_create(store=store, key=ScopeKey.individual("a1", "u1"))


@pytest.mark.parametrize("bad_id", ["nope", "", "0" * 23, "g" * 24, "0" * 25])
def test_malformed_or_unknown_ids_are_not_found(store, bad_id):
    with pytest.raises(NotFound):
        scope_get(store=store, scope_id=bad_id)
    with pytest.raises(NotFound):
        observation_get(store=store, observation_id=bad_id)


def test_scope_of_another_agent_is_not_found(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    assert scope_get(store=store, scope_id=scope.id, agent_ids=frozenset({"a1"})).id == scope.id
    with pytest.raises(NotFound):
        scope_get(store=store, scope_id=scope.id, agent_ids=frozenset({"a2"}))
    with pytest.raises(NotFound):
        scope_get(store=store, scope_id=new_id())


def test_scope_list_pages_newest_first_with_filters(store):
    made = [ScopeFactory.create(store=store, agent_id="a1") for _ in range(7)]
    groups = [ScopeFactory.create(store=store, agent_id="a1", group=True) for _ in range(3)]
    ScopeFactory.create(store=store, agent_id="other")

    seen: list[str] = []
    cursor = None
    while True:
        page = scope_list(store=store, agent_id="a1", limit=3, cursor=cursor)
        seen += [s.id for s in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [s.id for s in reversed(made + groups)]

    only_groups = scope_list(store=store, agent_id="a1", scope_type="group")
    assert {s.id for s in only_groups.items} == {g.id for g in groups}
    by_user = scope_list(store=store, agent_id="a1", user_id=made[2].user_id)
    assert [s.id for s in by_user.items] == [made[2].id]
    by_text = scope_list(store=store, agent_id="a1", text=groups[1].display_name.upper())
    assert [s.id for s in by_text.items] == [groups[1].id]


def test_sparse_filter_pages_through_windows(store):
    """A filter that matches rarely still pages correctly across many sequence windows."""
    scopes = [ScopeFactory.create(store=store, agent_id="a1") for _ in range(60)]
    rare = scopes[3]
    page = scope_list(store=store, agent_id="a1", user_id=rare.user_id, limit=1)
    assert [s.id for s in page.items] == [rare.id]


def test_malformed_cursor_and_limit_are_invalid_input(store):
    with pytest.raises(InvalidInput):
        scope_list(store=store, agent_id="a1", cursor="!!!not-a-cursor")
    with pytest.raises(InvalidInput):
        scope_list(store=store, agent_id="a1", limit=201)
    with pytest.raises(InvalidInput):
        scope_list(store=store, agent_id="a1", limit=0)


def test_observations_get_sequence_numbers_and_go_pending(store):
    scope = ScopeFactory.create(store=store)
    added = [ObservationFactory.create(store=store, scope=scope) for _ in range(5)]
    fresh = scope_get(store=store, scope_id=scope.id)
    assert [o.seq for o in added] == [1, 2, 3, 4, 5]
    assert fresh.pending_observation_ids == [o.id for o in added]
    assert fresh.observation_count == 5
    assert store.agents.get(scope.agent_id).pending_count == 5
    listed = observation_list(store=store, scope=fresh, status="pending", limit=2)
    assert [o.id for o in listed.items] == [added[4].id, added[3].id]


def test_concurrent_appends_never_share_a_sequence_number(store):
    scope = ScopeFactory.create(store=store)
    errors: list[Exception] = []

    def add() -> None:
        try:
            for _ in range(3):
                ObservationFactory.create(store=store, scope=scope)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.observation_seq == 12
    assert len(set(fresh.pending_observation_ids)) == 12
    listed = observation_list(store=store, scope=fresh, limit=50)
    assert sorted(o.seq for o in listed.items) == list(range(1, 13))


def test_commit_absorbs_pending_once_and_writes_history(store):
    scope = ScopeFactory.create(store=store)
    observations = [ObservationFactory.create(store=store, scope=scope) for _ in range(3)]
    ids = [o.id for o in observations[:2]]
    entry = consolidation_commit(
        store=store,
        scope=scope,
        expected_version=0,
        text="Gene likes Rust.",
        absorbed_ids=ids,
        trigger="manual",
        actor="test",
    )
    fresh = scope_get(store=store, scope_id=scope.id)
    assert entry.version == 1 and fresh.consolidation_version == 1
    assert fresh.consolidation == "Gene likes Rust."
    assert fresh.pending_observation_ids == [observations[2].id]
    assert observation_get(store=store, observation_id=ids[0]).status == "consolidated"
    with pytest.raises(Conflict):  # the same version cannot be committed twice
        consolidation_commit(
            store=store,
            scope=scope,
            expected_version=0,
            text="again",
            absorbed_ids=ids,
            trigger="manual",
            actor="test",
        )
    assert store.agents.get(scope.agent_id).pending_count == 1


def test_hand_edit_with_stale_version_conflicts_and_restore_makes_a_new_version(store):
    scope = ScopeFactory.create(store=store)
    consolidation_edit(store=store, scope=scope, text="v1", expected_version=0, actor="op")
    consolidation_edit(store=store, scope=scope, text="v2", expected_version=1, actor="op")
    with pytest.raises(Conflict):
        consolidation_edit(store=store, scope=scope, text="stale", expected_version=1, actor="op")
    fresh = scope_get(store=store, scope_id=scope.id)
    restored = consolidation_restore(store=store, scope=fresh, version=1, actor="op")
    assert restored.version == 3 and restored.text == "v1" and restored.restored_from == 1
    with pytest.raises(NotFound):
        consolidation_restore(store=store, scope=fresh, version=99, actor="op")
    history = consolidation_history(
        store=store, scope=scope_get(store=store, scope_id=scope.id), limit=2
    )
    assert [v.version for v in history.items] == [3, 2]
    rest = consolidation_history(
        store=store, scope=scope_get(store=store, scope_id=scope.id), cursor=history.next_cursor
    )
    assert [v.version for v in rest.items] == [1]
    assert rest.next_cursor is None
