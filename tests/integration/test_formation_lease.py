"""A real Celery worker through Redis, killed with SIGKILL in the middle of a formation.

While it works the job renews its lease; once it is dead the lease lapses after
MEMORY_JOB_STALE_SECONDS and the recovery sweep hands the job to another worker,
which takes the session back and forms it: well within seconds, not 15 minutes.
The run uses its own queue on the shared Redis (nothing is flushed).
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

from celery import Celery

from memory_admin.jobs.tasks import formation_settings
from streams.jobs import job_get
from streams.memory.formation import IncomingMessage, formation_request, messages_ingest
from tests.integration.workers import kill_worker, start_worker, wait_for
from tests.services import REDIS_URL, needs_redis

LEASE_SECONDS = 3
ANSWER = json.dumps({"observations": [{"content": "Gene prefers tea.", "scope": "individual"}]})


@needs_redis
def test_worker_killed_mid_formation_is_taken_over_within_the_lease(
    store, fake_openai, memory_db, embedded_mongo
):
    import redis

    queue = f"memory-lease-{uuid.uuid4().hex[:12]}"
    messages_ingest(
        store=store,
        agent_id="a1",
        session_id="s1",
        user_id="u1",
        user_name="Gene",
        groups=[],
        messages=[IncomingMessage(id="m1", role="user", content="I prefer tea.")],
        settings=formation_settings(),
    )
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    env = {
        **os.environ,
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "MEMORY_JOB_STALE_SECONDS": str(LEASE_SECONDS),
        "MONGODB_URI": embedded_mongo.uri,
        "MONGODB_DB": memory_db,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "MEMORY_LLM_MAX_RETRIES": "0",
    }
    fake_openai.delay(30, then="never used")  # the first worker dies while waiting here
    fake_openai.set_responder(lambda request: ANSWER)
    client = Celery(broker=REDIS_URL)
    client.conf.task_default_queue = queue
    worker = start_worker(env)
    try:
        client.send_task("memory_admin.tasks.run_formation", args=[job.id])
        wait_for(lambda: len(fake_openai.chat_requests) == 1, 60, "the extraction call")
        first_beat = store.jobs.collection.find_one({"_id": job.id_oid})["heartbeat_at"]
        wait_for(
            lambda: (
                store.jobs.collection.find_one({"_id": job.id_oid})["heartbeat_at"] > first_beat
            ),
            LEASE_SECONDS * 2,
            "the running job to renew its lease",
        )
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        killed_at = time.monotonic()
        assert job_get(store=store, job_id=job.id).status == "running"
        assert store.sessions.get_buffer("a1", "s1")["formation_job_id"] == job.id_oid

        worker = start_worker(env)
        # What beat does every 15 s: here as often as possible, to measure the takeover.
        while job_get(store=store, job_id=job.id).status != "succeeded":
            assert time.monotonic() - killed_at < LEASE_SECONDS + 20, "not taken over in time"
            client.send_task("memory_admin.tasks.retry_failed_jobs")
            time.sleep(0.5)
        taken_over_after = time.monotonic() - killed_at
    finally:
        kill_worker(worker)
        client.close()
        redis.Redis.from_url(REDIS_URL).delete(queue)
    done = job_get(store=store, job_id=job.id)
    assert done.result["messages"] == 1 and done.result["observations"] == 1
    assert taken_over_after >= LEASE_SECONDS - 0.5  # not before the lease lapsed
    buffer = store.sessions.get_buffer("a1", "s1")
    assert buffer["unformed_count"] == 0 and buffer["formation_job_id"] is None
