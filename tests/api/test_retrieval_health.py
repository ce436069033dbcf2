"""GET /agents/{id}/retrieval-health: per day calls, fired, fired with no hit, p95, phrases,
largest scopes, and seed 004 Appendix B's flag for vector search."""

from __future__ import annotations

import json

import pytest
from bson import ObjectId
from django.test import Client

from streams.store import MemoryStore, write_behind
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory


@pytest.fixture(autouse=True)
def log_on(settings):
    settings.MEMORY_CONTEXT_LOG_DAYS = 7


def _ask(api: Client, message: str, agent: str = "agent-1") -> dict:
    response = api.post(
        f"{API}/agents/{agent}/context",
        data=json.dumps({"user_id": "u1", "message": message}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def _health(api: Client, agent: str = "agent-1", **query: str):
    write_behind.flush()
    return api.get(f"{API}/agents/{agent}/retrieval-health", query)


@pytest.fixture
def gene(store: MemoryStore):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="Gene adopted a cat named Tom.")
    store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})
    return scope


def test_each_day_counts_calls_fired_and_fired_with_no_hit(api: Client, gene) -> None:
    _ask(api, "hello")  # not fired
    found = _ask(api, "Search your memory for my cat's name")
    assert found["retrieval"]["results"]
    missed = _ask(api, "Do you remember my favourite volcano?")
    assert missed["retrieval"]["triggered"] and not missed["retrieval"]["results"]

    body = _health(api, days="3").json()

    assert [d["calls"] for d in body["days"]] == [0, 0, 3]  # oldest first, today last
    today = body["days"][-1]
    assert (today["fired"], today["fired_no_hit"]) == (2, 1)
    assert today["no_hit_phrases"] == [{"phrase": "recall phrase: do you remember", "count": 1}]
    assert today["p95_ms"] is not None and today["p95_ms"] >= 0
    assert today["largest_scopes"][0]["scope_id"] == gene.id
    assert (body["calls"], body["fired"], body["fired_no_hit"]) == (3, 2, 1)
    assert body["vector_search_would_pay"] is False  # too few fired calls to judge
    assert {s["name"] for s in body["signals"]} == {
        "fires_with_nothing_found",
        "search_p95_ms",
        "observations_per_scope",
    }


def test_an_agent_whose_retrieval_keeps_finding_nothing_is_flagged(api: Client, gene) -> None:
    for n in range(20):
        _ask(api, f"Do you remember the volcano number {n}?")
    body = _health(api).json()
    signal = next(s for s in body["signals"] if s["name"] == "fires_with_nothing_found")
    assert signal["met"] is True and signal["value"] == 1.0
    assert body["vector_search_would_pay"] is True


def test_a_scope_over_a_thousand_observations_flags_the_agent(
    api: Client, store: MemoryStore, gene
) -> None:
    store.scopes.update_fields(ObjectId(gene.id), {"observation_count": 1500})
    _ask(api, "hello")
    body = _health(api).json()
    signal = next(s for s in body["signals"] if s["name"] == "observations_per_scope")
    assert signal == {
        "name": "observations_per_scope",
        "value": 1500,
        "threshold": 1000,
        "met": True,
    }
    assert body["vector_search_would_pay"] is True


def test_bad_days_are_a_422_and_other_agents_a_404(api: Client, limited_api: Client) -> None:
    for bad in ("0", "91", "week", "-1"):
        assert_error(_health(api, days=bad), 422, "validation_error")
    assert_error(_health(limited_api, agent="agent-2"), 404, "not_found")
    empty = _health(limited_api).json()
    assert empty["calls"] == 0 and len(empty["days"]) == 7
