"""Consolidation in chunks through the API (issue 42 item 3), in the four scope types:
`GET /scopes/{id}/consolidation-estimate` before, the estimate in the answer of
`POST /scopes/{id}/consolidate`, and the job's result saying how many chunks it took."""

from __future__ import annotations

import pytest
from bson import ObjectId

from benchmarks.consolidation_chunks import pending_seed
from memory_admin.stores import get_store
from streams.memory.consolidation_chunks import chunk_plan
from streams.memory.consolidation_runs import consolidation_inputs
from streams.memory.scopes import scope_get
from tests.api.conftest import API, assert_error
from tests.api.test_consolidation_by_age import KINDS, make_scope
from tests.factories import ScopeFactory

COUNT = 12


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def seeded(store, scope_id: str, count: int = COUNT):
    store.scopes.update_fields(ObjectId(scope_id), {"consolidation_threshold": 10_000})
    pending_seed(store=store, scope=scope_get(store=store, scope_id=scope_id), count=count)
    return scope_get(store=store, scope_id=scope_id)


def small_budget(store, scope) -> int:
    """A budget of about four observation lines beside what every prompt sends."""
    folded = consolidation_inputs(store=store, scope=scope)[1]
    whole = chunk_plan(store=store, scope=scope, observations=folded, budget=10**9)
    return whole.fixed_tokens + whole.line_tokens[0] * 4 // len(folded)


def estimate_of(api, scope_id: str) -> dict:
    response = api.get(f"{API}/scopes/{scope_id}/consolidation-estimate")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("kind", KINDS)
def test_the_estimate_then_consolidate_now_in_chunks(api, store, settings, run_tasks, kind):
    scope = seeded(store, make_scope(api, store, kind))
    assert estimate_of(api, scope.id)["chunks"] == 1  # 12 fit the default 6000 tokens
    budget = small_budget(store, scope)
    settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS = budget
    folded = consolidation_inputs(store=store, scope=scope)[1]
    plan = chunk_plan(store=store, scope=scope, observations=folded, budget=budget)
    estimate = estimate_of(api, scope.id)
    assert estimate == {
        "pending": COUNT,
        "folded": COUNT,
        "chunks": len(plan.chunks),
        "chunk_tokens": budget,
        "prompt_tokens": plan.prompt_tokens,
        "max_completion_tokens": plan.max_completion_tokens,
        "model": "offline-rules",
        "cost_usd": 0.0,  # the offline rules' price is nothing
    }
    assert estimate["chunks"] >= 3

    with run_tasks():
        response = api.post(f"{API}/scopes/{scope.id}/consolidate")
    assert response.status_code == 202, response.content
    assert response.json()["estimate"] == estimate
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "succeeded", job
    assert job["result"]["chunks"] == estimate["chunks"] == job["llm_calls"]
    assert job["result"]["absorbed"] == COUNT and job["result"]["chunk_tokens"] == budget
    assert 0 < job["result"]["prompt_tokens"] <= estimate["prompt_tokens"]
    history = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert len(history) == 1 and sorted(history[0]["absorbed_observation_ids"]) == sorted(
        scope.pending_observation_ids
    )
    after = api.get(f"{API}/scopes/{scope.id}").json()
    assert (after["pending_count"], after["consolidation_version"]) == (0, 1)
    nothing = estimate_of(api, scope.id)
    assert (nothing["pending"], nothing["chunks"], nothing["prompt_tokens"]) == (0, 0, 0)


def test_the_estimate_prices_the_configured_model(api, store, settings):
    scope = seeded(store, make_scope(api, store, "individual"))
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_MODEL_SLOW = "gpt-4o"
    estimate = estimate_of(api, scope.id)
    price_in, price_out = get_store().prices["gpt-4o"]
    expected = estimate["prompt_tokens"] * price_in + estimate["max_completion_tokens"] * price_out
    assert estimate["model"] == "gpt-4o"
    assert estimate["cost_usd"] == pytest.approx(round(expected) / 1_000_000)
    settings.MEMORY_LLM_MODEL_SLOW = "a-model-with-no-price"
    assert estimate_of(api, scope.id)["cost_usd"] is None


def test_the_estimate_counts_what_a_fold_reads(api, store):
    scope = seeded(store, make_scope(api, store, "individual"), count=3)
    response = api.post(
        f"{API}/scopes/{scope.id}/observations",
        {"content": "Dan's locker code is private.", "private": True},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    estimate = estimate_of(api, scope.id)
    assert (estimate["pending"], estimate["folded"]) == (4, 3)


def test_the_estimate_errors(api, limited_api, store, client):
    other = ScopeFactory.create(store=store, agent_id="agent-2")
    assert_error(
        limited_api.get(f"{API}/scopes/{other.id}/consolidation-estimate"), 404, "not_found"
    )
    assert_error(api.get(f"{API}/scopes/not-an-id/consolidation-estimate"), 404, "not_found")
    assert_error(api.get(f"{API}/scopes/{'0' * 24}/consolidation-estimate"), 404, "not_found")
    assert_error(client.get(f"{API}/scopes/{other.id}/consolidation-estimate"), 401, "unauthorized")
    response = api.post(f"{API}/scopes/{other.id}/consolidation-estimate")
    assert response.status_code == 405


def test_the_estimate_prices_the_model_the_scope_names(api, store, settings):
    """A scope (or its agent) that names a consolidation model is priced for that model,
    the one its run sends; without one, for the configured slow model."""
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_MODEL_SLOW = "gpt-4.1-mini"
    scope = seeded(store, make_scope(api, store, "group"))
    cheaper = estimate_of(api, scope.id)
    assert cheaper["model"] == "gpt-4.1-mini" and cheaper["cost_usd"] > 0
    patched = api.patch(
        f"{API}/scopes/{scope.id}", {"consolidation_model": "gpt-4.1"},
        content_type="application/json",
    )  # fmt: skip
    assert patched.status_code == 200, patched.content
    named = estimate_of(api, scope.id)
    assert named["model"] == "gpt-4.1" and named["cost_usd"] > cheaper["cost_usd"]
