"""`GET /api/v1/agents/{id}/usage`: totals, by prompt and model, rankings; access and errors."""

from __future__ import annotations

import pytest

from streams.jobs import job_execute
from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.scopes import scope_get
from tests.api.conftest import API
from tests.factories import ObservationFactory, ScopeFactory


@pytest.fixture
def consolidated(store, settings):
    settings.MEMORY_LLM_PRICES = {OFFLINE_MODEL: (1.0, 2.0)}
    store.prices = dict(settings.MEMORY_LLM_PRICES)
    scope = ScopeFactory.create(store=store, agent_id="agent-1")
    for _ in range(3):
        ObservationFactory.create(store=store, scope=scope)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="api", actor="t"
    )
    job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda run: consolidation_run(store=store, run=run),
    )
    return scope


def test_usage_sums_the_jobs_of_the_agent(api, consolidated):
    response = api.get(f"{API}/agents/agent-1/usage?days=30")
    assert response.status_code == 200
    body = response.json()
    total = body["total"]
    assert body["days"] == 30 and total["jobs"] == 1 and total["llm_calls"] == 1
    assert total["prompt_tokens"] > 0
    expected = (total["prompt_tokens"] + 2 * total["completion_tokens"]) / 1_000_000
    assert total["estimated_cost_usd"] == pytest.approx(expected)
    assert [p["name"] for p in body["by_prompt"]] == ["consolidation v0"]
    assert [m["name"] for m in body["by_model"]] == [OFFLINE_MODEL]
    assert [s["scope_id"] for s in body["top_scopes_by_cost"]] == [consolidated.id]


def test_an_agent_with_no_jobs_has_zeros(api):
    body = api.get(f"{API}/agents/quiet/usage").json()
    assert body["days"] == 7 and body["total"]["jobs"] == 0 and body["by_prompt"] == []


def test_bad_days_is_422_and_other_agents_are_404_for_limited_keys(api, limited_api):
    assert api.get(f"{API}/agents/agent-1/usage?days=5").status_code == 422
    assert limited_api.get(f"{API}/agents/agent-2/usage").status_code == 404
    assert limited_api.get(f"{API}/agents/agent-1/usage").status_code == 200
