"""An interrupted consolidation is finished by the run that takes over (probe finding F1).

The probe killed the job runner in the middle of a consolidation. The job, taken over
once its heartbeat went stale, found the scope's lease (5 minutes) still held, by
itself, and was marked `succeeded` with `absorbed: 0`; "Consolidate now" was then a
silent no-op until the lease ran out. The lease names the job holding it: that job
takes it back at once, a new job takes it from a dead one, and a job that meets a live
run's lease fails saying so (and is retried): none reports success for nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from memory_admin.jobs import inprocess
from memory_admin.jobs.tasks import retry_failed_jobs, run_consolidation
from streams.core.documents import utcnow
from streams.core.exceptions import Conflict
from streams.jobs import job_create, job_get
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.scopes import scope_get
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory
from tests.streams.memory.test_consolidation_runs import (
    assert_each_observation_pending_or_absorbed_once,
)
from tests.task_mode import BROKER, run_job

pytestmark = pytest.mark.django_db  # the sweep queues its tasks on the transaction's commit

FACT = "Gene likes green tea."
# What the model answers: every day stated (an answer dropping them is refused, issue 39).
ANSWER = "Gene likes green tea on Monday, Tuesday, Wednesday and Thursday."


@pytest.fixture
def scope(store):
    scope = ScopeFactory.create(store=store)
    for day in ("Monday", "Tuesday", "Wednesday", "Thursday"):  # four facts: dedup keeps each
        ObservationFactory.create(store=store, scope=scope, content=f"{FACT} ({day})")
    return scope_get(store=store, scope_id=scope.id)


def run_here(store, job_id):
    return run_job(
        store=store, job_id=job_id, work=lambda run: consolidation_run(store=store, run=run)
    )


def lease_of(store, scope_id: str) -> tuple[str | None, object]:
    doc = store.scopes.collection.find_one({"_id": ObjectId(scope_id)})
    return doc["lease_owner"], doc["lease_until"]


@pytest.mark.skipif(BROKER, reason="kills the in-process pool's job runner child")
def test_a_job_runner_killed_mid_consolidation_is_finished_by_the_takeover(
    store, scope, settings, fake_openai, django_capture_on_commit_callbacks
):
    settings.MEMORY_INPROCESS_WORKERS = 1
    settings.MEMORY_INPROCESS_ISOLATION = "process"
    settings.MEMORY_INPROCESS_NICENESS = 0
    settings.MEMORY_JOB_STALE_SECONDS = 1
    settings.MEMORY_CONSOLIDATION_LEASE_SECONDS = 300  # the default: the probe's 5 minutes
    fake_openai.delay(60, then="never committed")  # the runner dies while waiting here
    fake_openai.set_responder(lambda request: ANSWER)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    inprocess.submit(run_consolidation, job.id)
    assert eventually(lambda: len(fake_openai.chat_requests), until=bool, within=60) == 1
    runner = next(iter(inprocess._runners)).process
    runner.kill()  # SIGKILL: no finally, no release
    runner.wait(10)
    assert inprocess.wait_idle(timeout=30)

    assert job_get(store=store, job_id=job.id).status == "running"
    assert lease_of(store, scope.id)[0] == job.id  # the lease names the job
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 0

    def taken_over() -> bool:  # what the periodic sweep does, until the heartbeat is stale
        with django_capture_on_commit_callbacks(execute=True):
            retry_failed_jobs()
        assert inprocess.wait_idle(timeout=60)
        return job_get(store=store, job_id=job.id).status != "running"

    assert eventually(taken_over, until=bool, within=60), "the sweep never took the job over"
    done = job_get(store=store, job_id=job.id)
    assert done.status == "succeeded", done
    assert done.result["absorbed"] == 4 and done.result["version"] == 1
    assert "note" not in done.result
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.consolidation == ANSWER and fresh.pending_observation_ids == []
    assert lease_of(store, scope.id)[0] is None  # released at the end
    assert_each_observation_pending_or_absorbed_once(store, scope.id)
    inprocess.shutdown(timeout=30)


def _orphan_lease(store, scope_id: str, job_id: str, **job_fields) -> None:
    """What a killed run leaves: the scope's lease held by the job for 5 more minutes."""
    now = utcnow()
    assert store.scopes.acquire_lease(
        ObjectId(scope_id), owner=job_id, now=now, until=now + timedelta(minutes=5)
    )
    if job_fields:
        store.jobs.collection.update_one({"_id": ObjectId(job_id)}, {"$set": job_fields})


def test_consolidate_now_after_a_dead_run_is_not_a_silent_no_op(store, scope, fake_openai):
    dead = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    # Its runner died; the job was then finished (here: failed) without releasing the lease.
    _orphan_lease(store, scope.id, dead.id, status="failed", finished_at=utcnow())
    again = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    assert again.id != dead.id
    fake_openai.set_responder(lambda request: ANSWER)
    run_here(store, again.id)
    done = job_get(store=store, job_id=again.id)
    assert done.status == "succeeded" and done.result["absorbed"] == 4, done
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 1


def test_a_run_taken_over_after_its_heartbeat_stopped_takes_back_its_lease(
    store, scope, fake_openai
):
    dead = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    long_ago = utcnow() - timedelta(minutes=2)
    _orphan_lease(
        store, scope.id, dead.id, status="running", started_at=long_ago, heartbeat_at=long_ago
    )
    other = consolidation_request(store=store, scope=scope, trigger="threshold", actor=None)
    assert other.id == dead.id  # "Consolidate now" returns the active job: not a second one
    fake_openai.set_responder(lambda request: ANSWER)
    # The sweep re-runs the stale job: it takes back its own lease at once.
    run_here(store, dead.id)
    done = job_get(store=store, job_id=dead.id)
    assert done.status == "succeeded" and done.result["absorbed"] == 4, done


def test_a_live_runs_lease_fails_the_job_clearly_instead_of_a_success(store, scope, fake_openai):
    live = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    _orphan_lease(
        store, scope.id, live.id, status="running", started_at=utcnow(), heartbeat_at=utcnow()
    )
    # A second job of the scope (a rebuild's or a threshold's, queued meanwhile).
    blocked = job_create(
        store=store, kind="consolidation", agent_id=scope.agent_id, scope_id=scope.id
    )
    with pytest.raises(Conflict, match=f"job {live.id}"):
        run_here(store, blocked.id)
    failed = job_get(store=store, job_id=blocked.id)
    assert failed.status == "failed" and "retried later" in failed.error
    assert fake_openai.chat_requests == []
    assert len(scope_get(store=store, scope_id=scope.id).pending_observation_ids) == 4
    # Once the live run is over (here: it finished without releasing), the retry works.
    store.jobs.collection.update_one({"_id": ObjectId(live.id)}, {"$set": {"status": "failed"}})
    store.jobs.requeue(ObjectId(blocked.id))
    fake_openai.set_responder(lambda request: ANSWER)
    run_here(store, blocked.id)
    assert job_get(store=store, job_id=blocked.id).result["absorbed"] == 4
