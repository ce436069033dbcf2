"""Through the API: a delete flags the scope (`needs_rebuild`) and queues a `rebuild` job;
the flag stays while the model fails, and goes when the rebuild commits. Manual adds
and a lowered threshold queue a consolidation."""

from __future__ import annotations

import pytest

from memory_admin.jobs.tasks import enqueue
from streams.jobs import job_retry
from streams.memory.consolidation import consolidation_commit
from streams.memory.scopes import scope_get
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory


@pytest.fixture
def absorbed(store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    observations = [
        ObservationFactory.create(store=store, scope=scope, content=text)
        for text in ("The team deploys on Fridays.", "Gene kiteboards in Zanzibar.")
    ]
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text="Fridays. Zanzibar.", absorbed_ids=[o.id for o in observations],
        trigger="threshold", actor=None,
    )  # fmt: skip
    return scope, observations


def test_delete_flags_the_scope_until_the_rebuild_commits(
    api, store, absorbed, run_tasks, fake_openai
):
    scope, (kept, gone) = absorbed
    fake_openai.fail(status=500, times=10)
    with run_tasks():
        assert api.delete(f"{API}/observations/{gone.id}").status_code == 204
    body = api.get(f"{API}/scopes/{scope.id}").json()
    assert body["needs_rebuild"] is True and "Zanzibar" in body["consolidation"]
    [job] = [j for j in store.jobs.page(status="failed", agent_id=None, before=None, limit=5)]
    rebuild = api.get(f"{API}/jobs/{job.id}").json()
    assert (rebuild["kind"], rebuild["scope_id"]) == ("rebuild", scope.id)

    fake_openai.reset()
    fake_openai.reply("The team deploys on Fridays.")
    with run_tasks():  # what the retry sweep (or the Jobs page's Retry) does
        enqueue(job_retry(store=store, job_id=job.id))
    body = api.get(f"{API}/scopes/{scope.id}").json()
    assert body["needs_rebuild"] is False and body["consolidation_version"] == 2
    assert "Zanzibar" not in body["consolidation"]
    history = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert history[0]["trigger"] == "rebuild" and history[1]["redacted"] is True
    assert history[0]["absorbed_observation_ids"] == [kept.id]


def test_a_manual_add_at_the_threshold_queues_a_consolidation(api, store, run_tasks, fake_openai):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    assert (
        api.patch(
            f"{API}/scopes/{scope.id}",
            {"consolidation_threshold": 2},
            content_type="application/json",
        ).status_code
        == 200
    )
    fake_openai.reply("The facts are one and two.")
    with run_tasks():
        for text in ("One.", "Two."):
            response = api.post(
                f"{API}/scopes/{scope.id}/observations", {"content": text},
                content_type="application/json",
            )  # fmt: skip
            assert response.status_code == 201
    body = api.get(f"{API}/scopes/{scope.id}").json()
    assert (body["consolidation_version"], body["pending_count"]) == (1, 0)


def test_a_hand_edit_over_the_word_limit_is_422_with_the_count(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    response = api.patch(
        f"{API}/scopes/{scope.id}",
        {"consolidation": "word " * 501, "expected_version": 0},
        content_type="application/json",
    )
    assert_error(response, 422, "validation_error")
    assert "501 words" in response.json()["error"]["message"]
