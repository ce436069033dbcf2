"""DELETE /agents/{agent_id}/users/{user_id}: a forget_user job whose result is the receipt."""

from __future__ import annotations

import pytest

from streams.jobs import job_get
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.api.conftest import API, assert_error
from tests.task_mode import settle


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def test_forget_runs_the_job_and_the_receipt_counts(api, store, django_capture_on_commit_callbacks):
    individual, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "u1"))
    observation_add(store=store, scope=individual, content="Gene likes tea.")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"{API}/agents/a1/users/u1")
    settle(store)
    assert response.status_code == 202
    job_id = response.json()["job_id"]
    job = api.get(f"{API}/jobs/{job_id}").json()
    assert job["kind"] == "forget_user" and job["status"] == "succeeded"
    assert job["result"]["deleted"]["memory_scopes"] == 1
    assert job["result"]["deleted"]["memory_observations"] == 1
    assert job["result"]["actor"] == "api:test-key"
    assert api.get(f"{API}/scopes/{individual.id}").status_code == 404
    assert job_get(store=store, job_id=job_id).payload == {"user_id": "u1"}


def test_an_agent_key_forgets_only_users_of_its_agents(limited_api):
    assert_error(limited_api.delete(f"{API}/agents/agent-2/users/u1"), 404, "not_found")
    assert limited_api.delete(f"{API}/agents/agent-1/users/u1").status_code == 202


def test_bad_ids_and_no_key(api, client):
    assert_error(api.delete(f"{API}/agents/a1/users/{'x' * 129}"), 422, "validation_error")
    assert_error(client.delete(f"{API}/agents/a1/users/u1"), 401, "unauthorized")
