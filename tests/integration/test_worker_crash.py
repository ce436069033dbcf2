"""A real Celery worker through Redis, killed with SIGKILL in the middle of a consolidation.

Afterwards every observation is pending or absorbed exactly once, the history has no
gap, and once a worker is back the periodic recovery sweep finishes the job.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from celery import Celery

from streams.jobs import job_get
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_wire import faithful_memory
from tests.integration.workers import kill_worker, start_worker, wait_for
from tests.services import REDIS_URL, needs_redis
from tests.streams.memory.test_consolidation_runs import (
    assert_each_observation_pending_or_absorbed_once,
)

ROOT = Path(__file__).resolve().parents[2]


@needs_redis
def test_worker_killed_mid_consolidation_loses_nothing(
    store, fake_openai, memory_db, embedded_mongo
):
    queue = f"memory-crash-{uuid.uuid4().hex[:12]}"  # this run's own queue
    scope = ScopeFactory.create(store=store)
    for _ in range(4):
        ObservationFactory.create(store=store, scope=scope)
    env = {
        **os.environ,
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "CELERY_VISIBILITY_TIMEOUT": "3",
        "MEMORY_CONSOLIDATION_LEASE_SECONDS": "2",
        "MEMORY_JOB_STALE_SECONDS": "2",
        "MONGODB_URI": embedded_mongo.uri,
        "MONGODB_DB": memory_db,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "MEMORY_LLM_MAX_RETRIES": "0",
    }
    fake_openai.delay(30, then="never committed")  # the first worker dies while waiting here
    # A faithful memory of what it absorbs (an answer that states none of it is refused).
    fake_openai.set_responder(faithful_memory)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor="test"
    )
    client = Celery(broker=REDIS_URL)
    client.conf.task_default_queue = queue
    client.conf.broker_transport_options = {"visibility_timeout": 3}
    worker = start_worker(env)
    try:
        client.send_task("memory_admin.tasks.run_consolidation", args=[job.id])
        wait_for(lambda: len(fake_openai.chat_requests) == 1, 60, "the LLM call")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)

        killed = scope_get(store=store, scope_id=scope.id)
        assert killed.consolidation_version == 0 and len(killed.pending_observation_ids) == 4
        assert job_get(store=store, job_id=job.id).status == "running"
        assert_each_observation_pending_or_absorbed_once(store, scope.id)

        worker = start_worker(env)
        time.sleep(2.5)  # past MEMORY_JOB_STALE_SECONDS: the job's run counts as dead
        client.send_task("memory_admin.tasks.retry_failed_jobs")  # what beat runs every minute
        wait_for(
            lambda: job_get(store=store, job_id=job.id).status == "succeeded",
            90,
            "the redelivered task to finish the job",
        )
    finally:
        kill_worker(worker)
        client.close()
    done = scope_get(store=store, scope_id=scope.id)
    assert done.consolidation_version == 1 and done.consolidation
    assert "never committed" not in done.consolidation
    assert done.pending_observation_ids == []
    assert_each_observation_pending_or_absorbed_once(store, scope.id)
