"""Finding a user by the start of a display name (any word) or id, in one agent or all."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from streams.core.exceptions import InvalidInput
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.memory.user_names import name_keys, normalize
from streams.people.user_find import user_find
from tests.factories import ScopeFactory


def _world(store) -> None:
    ScopeFactory.create(store=store, agent_id="a1", user_id="u-7f3a", display_name="Gene Wilder")
    ScopeFactory.create(store=store, agent_id="a2", user_id="u-7f3b", display_name="Génesis Ortiz")
    ScopeFactory.create(store=store, agent_id="a1", user_id="u-9999", display_name="Ada")
    ScopeFactory.create(store=store, agent_id="a1", group=True, group_id="gene-team")


def test_normalize_and_name_keys():
    assert normalize("  Génè   W. ") == "gene w."
    assert name_keys("Gene Wilder") == ["gene wilder", "wilder"]
    assert name_keys(None) == []


def test_find_by_name_prefix_across_agents_and_within_one(store):
    _world(store)
    found = user_find(store=store, text="gen")
    assert {(m.agent_id, m.user_id) for m in found} == {("a1", "u-7f3a"), ("a2", "u-7f3b")}
    assert [m.user_id for m in user_find(store=store, text="GENE", agent_id="a1")] == ["u-7f3a"]
    assert [m.user_id for m in user_find(store=store, text="wild")] == ["u-7f3a"]  # surname
    assert user_find(store=store, text="wild", agent_id="a2") == []  # only in a1


def test_find_by_id_prefix(store):
    _world(store)
    found = user_find(store=store, text="u-7f", agent_id="a1")
    assert [(m.user_id, m.matched) for m in found] == [("u-7f3a", "id")]
    assert len(user_find(store=store, text="U-7F")) == 2


def test_a_rename_is_found_under_the_new_name(store):
    _world(store)
    ScopeFactory.create(store=store, agent_id="a1", user_id="u-9999", display_name="Ada Lovelace")
    assert [m.display_name for m in user_find(store=store, text="lovel")] == ["Ada Lovelace"]


def test_too_short_or_too_long_is_refused(store):
    with pytest.raises(InvalidInput):
        user_find(store=store, text="g")
    with pytest.raises(InvalidInput):
        user_find(store=store, text="x" * 129)


def test_backfill_records_users_written_before_names_were_kept(store):
    _world(store)
    store.user_names.collection.drop()
    assert user_find(store=store, text="gene") == []
    out = StringIO()
    call_command("backfill_user_names", stdout=out)
    assert "Recorded 3 users of 2 agents." in out.getvalue()
    assert len(user_find(store=store, text="gen")) == 2


def test_the_name_is_written_in_the_scope_creators_transaction(store):
    """A scope created (or renamed) in an aborted transaction leaves no findable name."""
    key = ScopeKey.individual("a1", "u-tx")

    def create_then_fail(session) -> None:
        scope_get_or_create(store=store, key=key, display_name="Gene Tx", session=session)
        raise RuntimeError("aborted")

    with pytest.raises(RuntimeError):
        store.in_transaction(create_then_fail)
    assert user_find(store=store, text="gene tx") == []

    store.in_transaction(
        lambda session: scope_get_or_create(
            store=store, key=key, display_name="Gene Tx", session=session
        )
    )
    assert [m.user_id for m in user_find(store=store, text="gene tx")] == ["u-tx"]

    def rename_then_fail(session) -> None:
        scope_get_or_create(store=store, key=key, display_name="Ada Tx", session=session)
        raise RuntimeError("aborted")

    with pytest.raises(RuntimeError):
        store.in_transaction(rename_then_fail)
    assert user_find(store=store, text="ada tx") == []
    assert [m.display_name for m in user_find(store=store, text="gene tx")] == ["Gene Tx"]
