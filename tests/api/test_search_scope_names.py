"""Issue 40: search answers carry the scope each hit came from by name, not by id alone."""

from __future__ import annotations

from typing import Any

from django.test import Client

from streams.store import MemoryStore
from streams.store.query_guard import QueryGuard
from tests.api.conftest import API
from tests.factories import ObservationFactory, ScopeFactory


def test_each_hit_names_its_scope(api: Client, store: MemoryStore) -> None:
    shard = ScopeFactory.create(store=store, shard=True, name="billing")
    mine = ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    ObservationFactory.create(store=store, scope=shard, content="Invoices are paid in euros")
    ObservationFactory.create(store=store, scope=mine, content="Gene pays invoices late")

    response = api.get(f"{API}/agents/agent-1/search", {"q": "invoices", "user_id": "u1"})

    assert response.status_code == 200
    scopes = {i["observation"]["scope_id"]: i["scope"] for i in response.json()["items"]}
    assert set(scopes[shard.id]) == {
        "id", "scope_type", "name", "display_name", "user_id", "group_id"
    }  # fmt: skip
    assert (scopes[shard.id]["scope_type"], scopes[shard.id]["name"]) == ("collective", "billing")
    assert scopes[mine.id]["display_name"] == "Gene" and scopes[mine.id]["user_id"] == "u1"


def test_the_hits_scopes_are_the_ones_the_search_read(
    api: Client, store: MemoryStore, query_guard: QueryGuard, memory_db: str, monkeypatch
) -> None:
    """One read of the scopes per search: the answer names each hit's scope from the
    scopes the search itself read, not from a second read of them by id."""
    group = ScopeFactory.create(store=store, group=True, group_id="g1", display_name="Eden")
    ObservationFactory.create(store=store, scope=group, content="Invoices are paid in euros")
    scope_reads: list[dict[str, Any]] = []
    original = query_guard.started

    def started(event: Any) -> None:
        if event.database_name == memory_db and event.command.get("find") == "memory_scopes":
            scope_reads.append(event.command.get("filter", {}))
        original(event)

    monkeypatch.setattr(query_guard, "started", started)
    response = api.get(f"{API}/agents/agent-1/search", {"q": "invoices", "group_id": "g1"})

    assert response.status_code == 200
    [item] = response.json()["items"]
    assert item["scope"]["display_name"] == "Eden" and item["scope"]["group_id"] == "g1"
    assert len(scope_reads) == 1 and "context_key" in scope_reads[0]
