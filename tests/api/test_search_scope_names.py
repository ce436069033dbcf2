"""Issue 40: search answers carry the scope each hit came from by name, not by id alone."""

from __future__ import annotations

from django.test import Client

from streams.store import MemoryStore
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
