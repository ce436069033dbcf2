"""The one switch of the embedded store's workarounds (`streams.store.flavour`,
MEMORY_STORE_FLAVOUR; docs/store.md): detected from the server, overridden by the
setting, and each workaround's two branches. Where the standard operation works on the
embedded store too (it is only slower there), both branches run against it and must
agree; where the embedded store cannot run it, the selection is what is tested, and the
gap itself is shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bson import ObjectId
from pymongo import InsertOne, MongoClient
from pymongo.errors import PyMongoError

from streams.core.documents import utcnow
from streams.core.screened import ScreenedText
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from streams.store.flavour import (
    EMBEDDED,
    MONGODB,
    Workarounds,
    choose_flavour,
    detect_flavour,
    flavour_of,
    parse_flavour,
)
from streams.store.scope_lists import PULL_INLINE


@pytest.fixture(params=[EMBEDDED, MONGODB])
def flavoured(request, store: MemoryStore) -> Iterator[MemoryStore]:
    """The test's store with the switch set to each flavour in turn (then detected again)."""
    choose_flavour(store.client, request.param)
    try:
        yield store
    finally:
        choose_flavour(store.client, None)


def _scope_id(store: MemoryStore) -> ObjectId:
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "team"))
    return ObjectId(scope.id)


def _lists(store: MemoryStore, scope_id: ObjectId) -> dict[str, list[ObjectId]]:
    names = ("pending_observation_ids", "rebuild_observation_ids")
    doc = store.scopes.collection.find_one({"_id": scope_id}, dict.fromkeys(names, 1))
    return {name: doc.get(name, []) for name in names}


def test_the_embedded_store_names_itself_in_build_info(store):
    assert detect_flavour(store.client) == EMBEDDED
    assert flavour_of(store.client) == EMBEDDED
    assert store.workarounds.embedded


def test_the_setting_overrides_what_the_server_says(store):
    choose_flavour(store.client, MONGODB)
    try:
        assert store.workarounds == Workarounds(MONGODB)
    finally:
        choose_flavour(store.client, None)
    assert store.workarounds == Workarounds(EMBEDDED)


def test_a_server_that_cannot_be_asked_counts_as_embedded_until_it_answers():
    client: MongoClient = MongoClient("mongodb://127.0.0.1:9/", serverSelectionTimeoutMS=100)
    try:
        assert detect_flavour(client) is None
        assert flavour_of(client) == EMBEDDED  # every workaround is correct on mongod too
    finally:
        client.close()


@pytest.mark.parametrize(
    ("value", "flavour"),
    [("", None), (None, None), ("embedded", EMBEDDED), (" MongoDB ", MONGODB)],
)
def test_the_setting_reads_the_two_flavours_or_nothing(value, flavour):
    assert parse_flavour(value) == flavour


def test_any_other_setting_is_refused():
    with pytest.raises(ValueError, match="MEMORY_STORE_FLAVOUR"):
        parse_flavour("atlas")


def test_each_workaround_is_on_for_the_embedded_store_only():
    embedded, mongodb = Workarounds(EMBEDDED), Workarounds(MONGODB)
    assert embedded.list_inline_max == PULL_INLINE and mongodb.list_inline_max is None
    assert embedded.lists_set_whole and not mongodb.lists_set_whole
    assert not embedded.batch_may_lead and mongodb.batch_may_lead
    assert embedded.kill_sessions_before_drop and not mongodb.kill_sessions_before_drop
    assert embedded.transactions_per_process == 1 and mongodb.transactions_per_process == 0


@pytest.mark.parametrize("count", [3, PULL_INLINE + 40])
def test_array_operators_or_lists_set_whole_leave_the_same_lists(flavoured, count):
    scope_id = _scope_id(flavoured)
    first = [ObjectId() for _ in range(count)]
    more = [ObjectId() for _ in range(count)]
    flavoured.scopes.push_pending(scope_id, first)
    flavoured.scopes.push_pending(scope_id, [first[0], *more, more[0]])
    flavoured.scopes.flag_rebuild(scope_id, more)
    assert _lists(flavoured, scope_id) == {
        "pending_observation_ids": [*first, *more],
        "rebuild_observation_ids": more,
    }
    assert flavoured.scopes.pull_pending(scope_id, [*first[1:], ObjectId()]) == 1
    flavoured.scopes.unflag_rebuild(scope_id, more[: count // 2])
    assert _lists(flavoured, scope_id) == {
        "pending_observation_ids": [first[0], *more],
        "rebuild_observation_ids": more[count // 2 :],
    }


@pytest.mark.parametrize("in_transaction", [False, True])
def test_a_consolidation_commit_drops_what_it_absorbed_on_both(flavoured, in_transaction):
    scope_id = _scope_id(flavoured)
    pending = [ObjectId() for _ in range(PULL_INLINE + 10)]
    flavoured.scopes.push_pending(scope_id, pending)
    flavoured.scopes.flag_rebuild(scope_id, pending[:5])
    absorbed, rebuilt = pending[:-3], pending[:2]

    def commit(session=None) -> bool:
        return flavoured.scopes.commit_consolidation(
            scope_id,
            expected_version=0,
            text=ScreenedText("Likes tea."),  # the store's own check is by type
            absorbed_ids=absorbed,
            rebuilt_ids=rebuilt,
            actor="test",
            now=utcnow(),
            session=session,
        )

    committed = flavoured.in_transaction(commit) if in_transaction else commit()
    assert committed
    assert _lists(flavoured, scope_id) == {
        "pending_observation_ids": pending[-3:],
        "rebuild_observation_ids": pending[2:5],
    }
    assert not commit(), "the version moved: a second commit misses"


def test_the_embedded_store_refuses_a_bulk_write_leading_a_transaction(store):
    """Why the batch waits for another command there (`batch_may_lead` off)."""
    namespace = store.observations.collection.full_name

    def lead_with_a_batch(session) -> None:
        store.client.bulk_write([InsertOne({"x": 1}, namespace=namespace)], session=session)

    with pytest.raises(PyMongoError) as refused:
        store.in_transaction(lead_with_a_batch)
    assert "readConcern" in str(refused.value) or "read concern" in str(refused.value), refused
