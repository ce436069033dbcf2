"""`/agents/{id}/ranking` and `/scopes/{id}/ranking`: the lifecycle switches resolved code <
agent < scope, with their measured effect; bad input in the error envelope."""

from __future__ import annotations

import pytest
from django.test import Client

from streams.store import MemoryStore
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory

JSON = "application/json"
KINDS = {"individual": {}, "group": {"group": True}, "collective": {"collective": True},
         "shard": {"shard": True}}  # fmt: skip


def _switches(response) -> dict[str, tuple[bool, str, bool | None]]:
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert "LoCoMo" in body["measured_on"]
    assert all(set(s["effect"]) == {"recall_at_5", "mrr"} for s in body["switches"])
    return {s["name"]: (s["value"], s["source"], s["own"]) for s in body["switches"]}


@pytest.mark.parametrize("kind", list(KINDS))
def test_agent_then_scope_settings_resolve_and_search_applies_them(
    api: Client, store: MemoryStore, kind: str
) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1", **KINDS[kind]) if kind == "individual" \
        else ScopeFactory.create(store=store, **KINDS[kind])  # fmt: skip
    ObservationFactory.create(store=store, scope=scope, content="Rust traits")
    ObservationFactory.create(store=store, scope=scope, content="Rust lifetimes")
    agent_url, scope_url = f"{API}/agents/agent-1/ranking", f"{API}/scopes/{scope.id}/ranking"
    assert _switches(api.get(agent_url))["recency"] == (False, "code", None)

    patched = api.patch(agent_url, {"recency": True}, content_type=JSON)
    assert _switches(patched)["recency"] == (True, "agent", True)
    assert _switches(api.get(scope_url))["recency"] == (True, "agent", None)
    search = f"{API}/agents/agent-1/search"
    params = {"q": "rust", "scope_id": scope.id, "explain": "true", "user_id": "u1"}
    hits = api.get(search, params).json()["items"]
    assert "recency" in hits[0]["explanation"]["mechanisms"]

    mine = _switches(api.patch(scope_url, {"recency": False, "mmr": True}, content_type=JSON))
    assert mine["recency"] == (False, "scope", False) and mine["mmr"] == (True, "scope", True)
    hits = api.get(search, params).json()["items"]
    assert all("recency" not in h["explanation"]["mechanisms"] for h in hits)
    back = _switches(api.patch(scope_url, {"recency": None}, content_type=JSON))
    assert back["recency"] == (True, "agent", None) and back["mmr"] == (True, "scope", True)


def test_bad_ranking_input_is_refused(api: Client, store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, group=True)
    for url in (f"{API}/agents/agent-1/ranking", f"{API}/scopes/{scope.id}/ranking"):
        for bad in ({"recency": "yes"}, {"recency": 1}, {"speed": True}, {"mmr": []}):
            assert_error(api.patch(url, bad, content_type=JSON), 422, "validation_error")
    assert_error(api.get(f"{API}/agents/nobody/ranking"), 404, "not_found")
    assert_error(api.patch(f"{API}/agents/nobody/ranking", {}, content_type=JSON), 404, "not_found")
    assert_error(api.get(f"{API}/scopes/not-an-id/ranking"), 404, "not_found")
    assert_error(api.get(f"{API}/scopes/{'0' * 24}/ranking"), 404, "not_found")


def test_a_limited_key_sees_only_its_agents_ranking(
    limited_api: Client, store: MemoryStore
) -> None:
    other = ScopeFactory.create(store=store, agent_id="agent-2", group=True)
    assert_error(limited_api.get(f"{API}/agents/agent-2/ranking"), 404, "not_found")
    assert_error(limited_api.get(f"{API}/scopes/{other.id}/ranking"), 404, "not_found")
