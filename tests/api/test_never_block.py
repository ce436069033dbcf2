"""Sessions that never stall: a failed formation releases its session at once, a dead one
is taken over when its lease lapses, jobs can be listed and retried, ingest answers
before formation runs, and the per-message and per-key limits answer 422 and 429."""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import timedelta

import pytest

from memory_admin.jobs import inprocess
from memory_admin.jobs.tasks import formation_settings, retry_failed_jobs
from streams.core.documents import utcnow
from streams.jobs import job_create, job_execute
from streams.memory.formation import formation_run
from tests.api.conftest import API, assert_error
from tests.fakes.openai_wire import one_fact_responder

SESSION = f"{API}/agents/agent-1/sessions/s1"
# What the model extracts from `msg`'s line (an empty answer for a line the offline rules
# find a fact in fails as `empty`, issue 39).
TEA = json.dumps(
    {
        "observations": [
            {
                "content": "Gene prefers green tea in the morning.",
                "scope": "individual:u1",
                "about": ["u1"],
                "sources": [],
            }
        ]
    }
)


@pytest.fixture(autouse=True)
def _extracts_the_tea(fake_openai) -> None:
    """Unscripted extractions name `msg`'s fact (an empty one fails as `empty`)."""
    fake_openai.set_responder(one_fact_responder("Gene prefers green tea in the morning."))


def ingest(client, messages: list[dict], **extra):
    body = {"user_id": "u1", "user_name": "Gene", "messages": messages, **extra}
    return client.post(f"{SESSION}/messages", body, content_type="application/json")


def msg(n: int, content: str = "I prefer green tea in the morning.", **extra) -> dict:
    return {"id": f"m{n}", "role": "user", "content": content, **extra}


def job(api, job_id: str) -> dict:
    return api.get(f"{API}/jobs/{job_id}").json()


def test_a_failed_formation_frees_the_session_and_form_forms_at_once(api, fake_openai, run_tasks):
    ingest(api, [msg(1)])
    fake_openai.reply("this is not JSON")
    with run_tasks():
        first = api.post(f"{SESSION}/form")
    assert first.status_code == 202
    assert job(api, first.json()["job_id"])["status"] == "failed"

    with run_tasks():
        second = api.post(f"{SESSION}/form")
    assert second.status_code == 202, second.content
    assert job(api, second.json()["job_id"])["status"] == "succeeded"
    assert_error(api.post(f"{SESSION}/form"), 409, "conflict")  # nothing left: it formed


def test_a_dead_formation_is_taken_over_once_its_lease_lapses(api, store, settings, run_tasks):
    settings.MEMORY_JOB_STALE_SECONDS = 30
    ingest(api, [msg(1)])
    dead = api.post(f"{SESSION}/form").json()["job_id"]  # queued, never dispatched
    long_ago = utcnow() - timedelta(seconds=31)
    dead_oid = _oid(dead)
    assert store.jobs.start(dead_oid, now=long_ago, stale_before=long_ago)
    assert_error(api.post(f"{SESSION}/form"), 409, "conflict")  # its claim is fresh still
    buffer = store.sessions.get_buffer("agent-1", "s1")
    store.sessions.buffers.update_one(
        {"_id": buffer["_id"]}, {"$set": {"formation_claimed_at": long_ago}}
    )
    # The sweep re-dispatches the job whose worker stopped renewing it; it takes the
    # session back and forms.
    with run_tasks():
        assert retry_failed_jobs() == 1
    done = store.jobs.get(dead_oid)
    assert done.status == "succeeded" and done.result["messages"] == 1, done


def test_a_running_formation_renews_its_lease(api, store, settings, fake_openai):
    settings.MEMORY_JOB_STALE_SECONDS = 1  # renewed every third of a second
    ingest(api, [msg(1)])
    job_id = api.post(f"{SESSION}/form").json()["job_id"]
    fake_openai.delay(2.0, then=TEA)
    from memory_admin.integrations.llm import get_llm_provider

    worker = threading.Thread(
        target=job_execute,
        kwargs={
            "store": store,
            "job_id": job_id,
            "llm": get_llm_provider(),
            "work": lambda run: formation_run(store=store, run=run, settings=formation_settings()),
            "stale_after": timedelta(seconds=1),
        },
    )
    worker.start()
    time.sleep(1.6)  # longer than the lease: only renewal keeps it
    assert_error(api.post(f"{SESSION}/form"), 409, "conflict")
    worker.join(10)
    assert job(api, job_id)["status"] == "succeeded"


def test_jobs_list_filters_pages_and_hides_other_agents(api, limited_api, store):
    for n in range(3):
        job_create(store=store, kind="formation", agent_id="agent-1", session_id=f"s{n}")
    job_create(store=store, kind="consolidation", agent_id="agent-1")
    job_create(store=store, kind="formation", agent_id="agent-2", session_id="x")

    page = api.get(f"{API}/jobs", {"kind": "formation", "limit": 2}).json()
    assert [j["session_id"] for j in page["items"]] == ["x", "s2"]
    rest = api.get(f"{API}/jobs", {"kind": "formation", "cursor": page["next_cursor"]}).json()
    assert [j["session_id"] for j in rest["items"]] == ["s1", "s0"]
    assert rest["next_cursor"] is None
    assert len(api.get(f"{API}/jobs", {"status": "queued"}).json()["items"]) == 5
    mine = limited_api.get(f"{API}/jobs").json()["items"]
    assert {j["kind"] for j in mine} == {"formation", "consolidation"} and len(mine) == 4
    assert limited_api.get(f"{API}/jobs", {"agent_id": "agent-2"}).json()["items"] == []
    assert_error(api.get(f"{API}/jobs", {"status": "nope"}), 422, "validation_error")


def test_retry_runs_a_failed_job_again(api, limited_api, store, fake_openai, run_tasks):
    ingest(api, [msg(1)])
    fake_openai.reply("not JSON")
    with run_tasks():
        job_id = api.post(f"{SESSION}/form").json()["job_id"]
    assert job(api, job_id)["status"] == "failed"
    with run_tasks():
        response = api.post(f"{API}/jobs/{job_id}/retry")
    assert response.status_code == 202 and response.json()["id"] == job_id
    assert job(api, job_id)["status"] == "succeeded"
    assert_error(api.post(f"{API}/jobs/{job_id}/retry"), 409, "conflict")
    other = job_create(store=store, kind="formation", agent_id="agent-2", session_id="x")
    assert_error(limited_api.post(f"{API}/jobs/{other.id}/retry"), 404, "not_found")


def test_ingest_answers_before_the_formation_runs(api, settings, fake_openai, run_tasks):
    settings.MEMORY_INPROCESS_WORKERS = 1
    settings.MEMORY_FORMATION_MIN_MESSAGES = 1
    settings.MEMORY_FORMATION_MAX_MESSAGES = 1
    fake_openai.delay(1.5, then=TEA)
    started = time.monotonic()
    with run_tasks():  # the request's on-commit dispatch: here, to the pool
        body = ingest(api, [msg(1)]).json()
    assert time.monotonic() - started < 1.0  # the formation (1.5 s of model) runs later
    assert body["formation_job_id"] is not None
    assert job(api, body["formation_job_id"])["status"] in ("queued", "running")
    assert inprocess.wait_idle(timeout=20)
    assert job(api, body["formation_job_id"])["status"] == "succeeded"


def test_a_message_over_the_limit_is_422_naming_it(api, settings):
    settings.MEMORY_MESSAGE_MAX_CHARS = 100
    error = assert_error(
        ingest(api, [msg(1, "x" * 100), msg(2, "y" * 101)]), 422, "validation_error"
    )
    assert error["details"][0]["field"] == "messages[1].content"
    assert "message 1 (m2)" in error["message"]
    assert ingest(api, [msg(1, "x" * 100)]).status_code == 202


def test_the_rate_limit_answers_429_with_retry_after(api, limited_api, settings):
    settings.MEMORY_API_RATE_LIMIT = 3
    from django.core.cache import cache

    cache.clear()
    for _ in range(3):
        assert api.get(f"{API}/jobs").status_code == 200
    response = api.get(f"{API}/jobs")
    error = assert_error(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert error["details"]["retry_after_seconds"] == int(response["Retry-After"])
    assert limited_api.get(f"{API}/jobs").status_code == 200  # per key


def test_per_message_speakers_through_the_api(api, store):
    response = ingest(
        api,
        [msg(1), msg(2, "I am allergic to peanuts.", user_id="u2", user_name="Ana")],
        groups=[{"id": "g1", "name": "Eden"}],
    )
    assert response.status_code == 202
    found = store.db["memory_messages"].find({"agent_id": "agent-1"}).limit(10)
    docs = {d["message_id"]: d for d in found}
    assert (docs["m1"]["user_id"], docs["m1"]["user_name"]) == ("u1", "Gene")
    assert (docs["m2"]["user_id"], docs["m2"]["user_name"]) == ("u2", "Ana")
    assert docs["m2"]["groups"] == [{"id": "g1", "name": "Eden"}]
    assert store.sessions.get_buffer("agent-1", "s1")["speaker_ids"] == ["u1", "u2"]
    bad = ingest(api, [msg(1, user_id="")])
    assert_error(bad, 422, "validation_error")


def _oid(job_id: str):
    from bson import ObjectId

    return ObjectId(job_id)


@pytest.fixture(autouse=True)
def _no_pool_leftovers():
    yield
    inprocess.wait_idle(timeout=20)


def test_the_pool_runs_jobs_in_a_child_process_with_this_process_settings(
    api, settings, fake_openai, store, run_tasks
):
    """The child takes the store, database and model settings from the web process with
    each job (not from its environment): here, this test's database and fake model."""
    settings.MEMORY_INPROCESS_WORKERS = 1
    settings.MEMORY_INPROCESS_ISOLATION = "process"
    settings.MEMORY_INPROCESS_NICENESS = 0  # a loaded test machine must not starve it
    settings.MEMORY_FORMATION_MAX_MESSAGES = 1
    settings.MEMORY_FORMATION_MIN_MESSAGES = 1
    fake_openai.reply_json(
        {"observations": [{"content": "Gene drinks green tea.", "scope": "individual:u1"}]}
    )
    first = _ingest_and_wait(api, run_tasks, msg(1))
    assert first["status"] == "succeeded", first
    assert first["result"]["observations"] == 1
    children = list(inprocess._runners)
    assert len(children) == 1 and children[0].process.pid != os.getpid()
    formed = store.db["memory_observations"].find({"agent_id": "agent-1"}).limit(5)
    assert [o["content"] for o in formed] == ["Gene drinks green tea."]

    # A child that died between jobs is replaced; the next job still runs.
    children[0].process.kill()
    children[0].process.wait()
    fake_openai.reply(TEA)
    assert _ingest_and_wait(api, run_tasks, msg(2))["status"] == "succeeded"

    process = next(iter(inprocess._runners)).process
    assert inprocess.shutdown(timeout=30)
    assert process.poll() is not None and not inprocess._runners


def test_the_pool_and_its_child_are_ready_before_the_first_job(
    api, settings, fake_openai, store, run_tasks, monkeypatch
):
    """The first job after a start waited seconds in the queue while the pool started its
    child (Django, the store, its indexes). The WSGI module's start-up now starts the pool,
    and each child opens the store before any job arrives; the first job runs in it."""
    from memory_admin.jobs import scheduler

    started: list[bool] = []
    monkeypatch.setattr(scheduler, "_started", threading.Event())
    monkeypatch.setattr(scheduler, "_loop", lambda: None)  # no periodic sweeps in a test
    monkeypatch.setattr(inprocess, "start", lambda: started.append(True))
    scheduler.start_inprocess_scheduler()
    assert started == [True]
    monkeypatch.undo()

    settings.MEMORY_INPROCESS_WORKERS = 1
    settings.MEMORY_INPROCESS_ISOLATION = "process"
    settings.MEMORY_INPROCESS_NICENESS = 0  # a loaded test machine must not starve it
    settings.MEMORY_FORMATION_MAX_MESSAGES = 1
    settings.MEMORY_FORMATION_MIN_MESSAGES = 1
    inprocess.start()
    assert inprocess.wait_warm(timeout=120), "the child never answered its warm-up"
    [child] = list(inprocess._runners)  # started before any job was submitted
    pid = child.process.pid
    assert child.process.poll() is None and pid != os.getpid()
    fake_openai.reply_json(
        {"observations": [{"content": "Gene drinks green tea.", "scope": "individual:u1"}]}
    )
    first = _ingest_and_wait(api, run_tasks, msg(1))
    assert first["status"] == "succeeded", first
    assert [r.process.pid for r in inprocess._runners] == [pid]  # the warm child ran it


def _ingest_and_wait(api, run_tasks, message: dict) -> dict:
    with run_tasks():  # the request's on-commit dispatch: here, to the pool
        body = ingest(api, [message]).json()
    assert body["formation_job_id"] is not None, body
    assert inprocess.wait_idle(timeout=120), "the child never answered"
    return job(api, body["formation_job_id"])


def test_a_child_that_overruns_is_killed_and_its_job_left_to_its_lease(
    api, settings, fake_openai, store, run_tasks, monkeypatch
):
    """No wait on a child is unbounded: past the job timeout it is killed (nothing of it
    writes later, e.g. after the test's database is dropped) and the pool goes on."""
    settings.MEMORY_INPROCESS_WORKERS = 1
    settings.MEMORY_INPROCESS_ISOLATION = "process"
    settings.MEMORY_INPROCESS_NICENESS = 0
    settings.MEMORY_FORMATION_MAX_MESSAGES = 1
    settings.MEMORY_FORMATION_MIN_MESSAGES = 1
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 30
    monkeypatch.setattr(inprocess, "JOB_TIMEOUT_SECONDS", 2.0)
    fake_openai.delay(8.0, then=TEA)
    with run_tasks():
        body = ingest(api, [msg(1)]).json()
    assert inprocess.wait_idle(timeout=60)  # the pool gave up on the child
    assert not inprocess._runners  # killed, not waited for
    status = job(api, body["formation_job_id"])["status"]
    assert status in ("queued", "running"), status  # its lease lapses; the sweep takes over
    assert store.sessions.get_buffer("agent-1", "s1")["unformed_count"] == 1
