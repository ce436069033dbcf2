"""Jobs: the documented shape, and 404 for unknown, malformed or other agents' jobs."""

from __future__ import annotations

import pytest
from django.test import Client

from streams.jobs import job_create
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory

JOB_FIELDS = {
    "id", "kind", "status", "scope_id", "session_id", "created_at", "started_at",
    "finished_at", "error", "llm_calls", "result",
}  # fmt: skip


def test_a_queued_job_has_exactly_the_documented_fields(api, store):
    scope = ScopeFactory.create(store=store)
    job = job_create(
        store=store, kind="consolidation", agent_id="agent-1", scope_id=scope.id, trigger="api"
    )
    response = api.get(f"{API}/jobs/{job.id}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == JOB_FIELDS
    assert body["id"] == job.id
    assert (body["kind"], body["status"], body["scope_id"]) == ("consolidation", "queued", scope.id)
    assert (body["session_id"], body["started_at"], body["finished_at"]) == (None, None, None)
    assert (body["error"], body["llm_calls"], body["result"]) == (None, 0, {})
    assert body["created_at"].endswith("Z")


@pytest.mark.parametrize("job_id", ["0" * 24, "nope", "z" * 24, "a" * 25])
def test_unknown_or_malformed_job_is_404(api, job_id):
    assert_error(api.get(f"{API}/jobs/{job_id}"), 404, "not_found")


def test_other_agents_jobs_are_404_for_a_limited_key(limited_api, store):
    mine = job_create(store=store, kind="formation", agent_id="agent-1", session_id="s1")
    theirs = job_create(store=store, kind="formation", agent_id="agent-2", session_id="s1")
    assert limited_api.get(f"{API}/jobs/{mine.id}").json()["session_id"] == "s1"
    assert_error(limited_api.get(f"{API}/jobs/{theirs.id}"), 404, "not_found")


def test_jobs_need_a_key(db, store):
    job = job_create(store=store, kind="formation", agent_id="agent-1", session_id="s1")
    assert_error(Client().get(f"{API}/jobs/{job.id}"), 401, "unauthorized")
