"""A broker that cannot be reached never fails a request whose write has committed.

Found by the multi-host rehearsal (docs/rehearsal.md): with Redis killed, a batch add
was stored, then its job's hand-off to Celery raised and the caller got a 500. The job
document is the durable record; the recovery sweep sends what nobody sent.
"""

from __future__ import annotations

import logging

import pytest
from kombu.exceptions import OperationalError

from memory_admin.jobs import inprocess, tasks
from streams.jobs import job_get

pytestmark = pytest.mark.django_db


def refuse(*_args, **_kwargs):
    raise OperationalError("Error 111 connecting to 10.88.0.31:6379. Connection refused.")


def test_a_job_the_broker_refuses_is_a_202_and_stays_queued(
    api, store, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(inprocess, "enabled", lambda: False)  # as with CELERY_BROKER_URL
    monkeypatch.setattr(tasks.TASKS_BY_KIND["formation"], "delay", refuse)
    ingest = api.post(
        "/api/v1/agents/a1/sessions/s1/messages",
        {"user_id": "u1", "messages": [{"id": "m1", "role": "user", "content": "I like tea."}]},
        content_type="application/json",
    )
    assert ingest.status_code == 202, ingest.content
    with (
        caplog.at_level(logging.WARNING, logger="memory_admin.jobs.tasks"),
        django_capture_on_commit_callbacks(execute=True) as sent,
    ):
        formed = api.post("/api/v1/agents/a1/sessions/s1/form")
    assert sent, "the job was handed to the broker on commit"
    assert formed.status_code == 202, formed.content
    assert job_get(store=store, job_id=formed.json()["job_id"]).status == "queued"
    assert "left queued for the recovery sweep" in caplog.text
