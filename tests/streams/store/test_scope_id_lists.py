"""Adding ids to a scope's id lists (pending, rebuild): each id at most once, in the order
given after those already listed, the same whether a few go in with `$addToSet` or many
are merged and set whole (`streams.store.scope_lists.add_to_list`), and inside a transaction
only once it commits."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from streams.store.bulk import BulkRepository
from streams.store.scope_lists import PULL_INLINE


def _scope_id(store: MemoryStore) -> ObjectId:
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "team"))
    return ObjectId(scope.id)


def _listed(store: MemoryStore, scope_id: ObjectId, name: str) -> list[ObjectId]:
    return store.scopes.collection.find_one({"_id": scope_id}, {name: 1}).get(name, [])


@pytest.mark.parametrize("count", [3, PULL_INLINE + 40])
@pytest.mark.parametrize("name", ["rebuild_observation_ids", "pending_observation_ids"])
def test_ids_are_added_once_each_in_order(store, name: str, count: int):
    scope_id = _scope_id(store)
    add = {
        "rebuild_observation_ids": store.scopes.flag_rebuild,
        "pending_observation_ids": store.scopes.push_pending,
    }[name]
    first = [ObjectId() for _ in range(count)]
    add(scope_id, first)
    more = [ObjectId() for _ in range(count)]
    # Repeats of listed ids and within the call are added once.
    add(scope_id, [first[0], *more, more[0], first[-1]])
    assert _listed(store, scope_id, name) == [*first, *more]
    add(scope_id, first)  # nothing new: nothing changes
    assert _listed(store, scope_id, name) == [*first, *more]


@pytest.mark.parametrize("count", [3, PULL_INLINE + 40])
def test_in_a_transaction_the_ids_count_only_once_it_commits(store, count: int):
    scope_id = _scope_id(store)
    kept = [ObjectId() for _ in range(count)]
    store.scopes.flag_rebuild(scope_id, kept)
    repo = BulkRepository(store.db)

    def flag_then_fail(session) -> None:
        repo.flag_rebuild(scope_id, [ObjectId() for _ in range(count)], session=session)
        raise RuntimeError("aborted")

    with pytest.raises(RuntimeError):
        store.in_transaction(flag_then_fail)
    assert _listed(store, scope_id, "rebuild_observation_ids") == kept

    added = [ObjectId() for _ in range(count)]
    store.in_transaction(
        lambda session: repo.flag_rebuild(scope_id, [*added, kept[0]], session=session)
    )
    assert _listed(store, scope_id, "rebuild_observation_ids") == [*kept, *added]
