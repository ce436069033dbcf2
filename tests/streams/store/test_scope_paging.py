"""Scope list filters checked in Python inside bounded seq windows: pages, cursors, budget."""

from __future__ import annotations

from streams.store import paging
from streams.store.paging import page_by_seq_filtered
from tests.factories import ScopeFactory


def test_type_and_text_filters_page_through_every_match(store):
    made = [ScopeFactory.create(store=store, agent_id="a1", group=(i % 3 == 0)) for i in range(30)]
    groups = [s.id for s in reversed(made) if s.scope_type == "group"]
    seen, before = [], None
    while True:
        items, before = store.scopes.page(
            agent_id="a1", top_seq=30, before=before, limit=4, scope_type="group"
        )
        seen += [s.id for s in items]
        if before is None:
            break
    assert seen == groups
    oldest, _ = store.scopes.page(
        agent_id="a1", top_seq=30, before=None, limit=2, scope_type="group", ascending=True
    )
    assert [s.id for s in oldest] == groups[::-1][:2]


def test_a_page_reads_at_most_the_budget_and_says_where_it_stopped(store, monkeypatch):
    monkeypatch.setattr(paging, "RESIDUAL_BUDGET", 10)
    for _ in range(25):
        ScopeFactory.create(store=store, agent_id="a1")
    page = page_by_seq_filtered(
        store.scopes.collection,
        base_filter={"agent_id": "a1"},
        keep=lambda doc: False,
        top_seq=25,
        before=None,
        limit=5,
    )
    assert page.docs == [] and page.next_before == 16  # seqs 25..16 read; continue below 16
    rest = page_by_seq_filtered(
        store.scopes.collection,
        base_filter={"agent_id": "a1"},
        keep=lambda doc: doc["seq"] == 7,
        top_seq=25,
        before=page.next_before,
        limit=5,
    )
    assert [d["seq"] for d in rest.docs] == [7] and rest.next_before == 6


def test_user_and_group_filters_find_their_scope_directly(store):
    gene = ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene")
    team = ScopeFactory.create(store=store, agent_id="a1", group=True, group_id="eden")
    for _ in range(5):
        ScopeFactory.create(store=store, agent_id="a1")
    by_user, after = store.scopes.page(
        agent_id="a1", top_seq=7, before=None, limit=25, user_id="u-gene"
    )
    assert [s.id for s in by_user] == [gene.id] and after is None
    by_group, _ = store.scopes.page(
        agent_id="a1", top_seq=7, before=None, limit=25, group_id="eden"
    )
    assert [s.id for s in by_group] == [team.id]
    wrong_type, _ = store.scopes.page(
        agent_id="a1", top_seq=7, before=None, limit=25, user_id="u-gene", scope_type="group"
    )
    assert wrong_type == []
