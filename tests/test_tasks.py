"""The periodic sweeps and in-process task execution (the embedded default)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import (
    enqueue,
    formation_settings,
    retry_failed_jobs,
    sweep_cold_sessions,
)
from streams.core.documents import utcnow
from streams.jobs import job_create, job_get
from streams.memory.formation import IncomingMessage, messages_ingest
from tests.fakes.openai_wire import one_fact_responder

pytestmark = pytest.mark.django_db  # tasks are queued on the Django transaction's commit


def ingest(store, n: int, start: int = 0) -> None:
    messages_ingest(
        store=store,
        agent_id="a1",
        session_id="s1",
        user_id="u1",
        user_name="Gene",
        groups=[],
        messages=[
            IncomingMessage(id=f"m{i}", role="user", content="I prefer tea.")
            for i in range(start, start + n)
        ],
        settings=formation_settings(),
    )


def age_session(store, minutes: int) -> None:
    store.sessions.buffers.update_one(
        {"agent_id": "a1", "session_id": "s1"},
        {"$set": {"last_message_at": utcnow() - timedelta(minutes=minutes)}},
    )


def test_cold_sessions_form_after_ten_idle_minutes_with_at_least_four_messages(store, run_tasks):
    ingest(store, 3)
    age_session(store, 11)
    assert sweep_cold_sessions.apply().get() == 0  # under the minimum
    ingest(store, 1, start=3)
    assert sweep_cold_sessions.apply().get() == 0  # not idle yet
    age_session(store, 11)
    with run_tasks():
        assert sweep_cold_sessions.apply().get() == 1
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 0
    assert sweep_cold_sessions.apply().get() == 0


def test_failed_jobs_are_retried_after_their_backoff_and_dead_runs_are_taken_over(
    store, fake_openai, settings, run_tasks
):
    ingest(store, 4)
    from streams.memory.formation import formation_request

    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    fake_openai.fail(500, times=3)
    with run_tasks():
        enqueue(job)
    failed = job_get(store=store, job_id=job.id)
    assert failed.status == "failed" and failed.attempts == 1
    assert retry_failed_jobs.apply().get() == 0  # backoff not over
    store.jobs.collection.update_one(
        {"_id": ObjectId(job.id)}, {"$set": {"finished_at": utcnow() - timedelta(hours=1)}}
    )
    fake_openai.reset()
    fake_openai.set_responder(one_fact_responder("Gene prefers tea."))
    with run_tasks():
        assert retry_failed_jobs.apply().get() == 1
    assert job_get(store=store, job_id=job.id).status == "succeeded"

    settings.MEMORY_JOB_STALE_SECONDS = 60
    stuck = job_create(store=store, kind="formation", agent_id="a1", session_id="s1")
    store.jobs.collection.update_one(
        {"_id": ObjectId(stuck.id)},
        {"$set": {"status": "running", "started_at": utcnow() - timedelta(minutes=5)}},
    )
    with run_tasks():
        assert retry_failed_jobs.apply().get() == 1
    assert job_get(store=store, job_id=stuck.id).status == "succeeded"
