"""A real Celery worker outlives its broker's restart while it holds a job.

Found by the multi-host rehearsal (docs/rehearsal.md): Redis was killed while the worker
ran a job (acks_late: its message unacknowledged), and the worker process ended with
"Unrecoverable error: AttributeError('NoneType' object has no attribute 'hostname')"
(kombu restores the unacknowledged message through the connection it has just closed;
without that, acknowledging the job after the reconnect ended it the same way). Nothing
ran the jobs after that: 16 of 28 formation jobs were still queued 120 s after
the load. Redis here is its own `redis-server` on a free port, killed and started again.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from celery import Celery

from streams.jobs import job_get
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_wire import faithful_memory
from tests.integration.workers import kill_worker, start_worker, wait_for
from tests.services import needs_redis_server

REDIS_SERVER = shutil.which("redis-server") or "redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(port: int, log: Path) -> subprocess.Popen:
    """A Redis of this test's own that keeps nothing (as the rehearsal's)."""
    argv = [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--save", ""]
    argv += ["--appendonly", "no"]
    with log.open("ab") as out:
        server = subprocess.Popen(argv, stdout=out, stderr=out, start_new_session=True)
    wait_for(lambda: _accepts(port), 30, f"redis-server on port {port}")
    return server


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def restart_redis(servers: list[subprocess.Popen], port: int, log: Path) -> None:
    """SIGKILL (it keeps nothing), a few seconds down, started again on the same port."""
    servers[-1].send_signal(signal.SIGKILL)
    servers[-1].wait(10)
    time.sleep(3)  # the worker notices the lost connection and retries while Redis is down
    servers.append(start_redis(port, log))
    time.sleep(3)  # the worker reconnects


@contextmanager
def own_redis(tmp_path: Path) -> Iterator[tuple[int, list[subprocess.Popen]]]:
    port, servers = free_port(), []
    servers.append(start_redis(port, tmp_path / "redis.log"))
    try:
        yield port, servers
    finally:
        for server in servers:
            if server.poll() is None:
                server.kill()
                server.wait(10)


@needs_redis_server
def test_a_worker_holding_a_job_outlives_a_redis_restart(
    store, fake_openai, memory_db, embedded_mongo, tmp_path
):
    scope = ScopeFactory.create(store=store)
    for _ in range(4):
        ObservationFactory.create(store=store, scope=scope)
    fake_openai.set_responder(faithful_memory)
    fake_openai.delay(5)  # the job is in the worker's hands, unacknowledged, when Redis dies
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor="test"
    )
    with own_redis(tmp_path) as (port, servers):
        broker = f"redis://127.0.0.1:{port}/0"
        queue = f"memory-restart-{uuid.uuid4().hex[:12]}"
        env = {
            **os.environ,
            "CELERY_BROKER_URL": broker,
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "MEMORY_JOB_STALE_SECONDS": "2",
            "MONGODB_URI": embedded_mongo.uri,
            "MONGODB_DB": memory_db,
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": fake_openai.base_url,
            "MEMORY_LLM_MAX_RETRIES": "0",
        }
        client = Celery(broker=broker)
        client.conf.task_default_queue = queue
        log = tmp_path / "worker.log"
        # The production pool (prefork), as `celery -A memory_admin worker` runs it.
        worker = start_worker(
            env, pool=("--pool=prefork", "--concurrency=2"), log_path=log, heartbeat=True
        )
        try:
            client.send_task("memory_admin.tasks.run_consolidation", args=[job.id])
            wait_for(lambda: len(fake_openai.chat_requests) == 1, 60, "the job's LLM call")
            for _ in range(2):  # the second outage is the one that ended it
                restart_redis(servers, port, tmp_path / "redis.log")
            wait_for(
                lambda: (
                    job_get(store=store, job_id=job.id).status == "succeeded"
                    or worker.poll() is not None
                ),
                60,
                "the job to finish or the worker to end",
            )
            assert worker.poll() is None, "the worker ended:\n" + log.read_text()[-3000:]
            # It still takes work from the restarted broker: a job sent after the restart.
            other = ScopeFactory.create(store=store)
            for _ in range(4):
                ObservationFactory.create(store=store, scope=other)
            later = consolidation_request(
                store=store,
                scope=scope_get(store=store, scope_id=other.id),
                trigger="manual",
                actor="test",
            )
            client.send_task("memory_admin.tasks.run_consolidation", args=[later.id])
            wait_for(
                lambda: job_get(store=store, job_id=later.id).status == "succeeded",
                60,
                "a job sent after the restart to finish",
            )
            assert job_get(store=store, job_id=job.id).status == "succeeded"
        finally:
            kill_worker(worker)
            client.close()
