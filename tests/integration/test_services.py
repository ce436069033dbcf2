"""The same code on the production services: Django on PostgreSQL, Celery through Redis.

Run whenever the services are present; CI makes them present and demands them
(tests/services.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import Celery

from tests.integration.side_runs import POSTGRES_TEST, side_run
from tests.integration.workers import kill_worker, start_worker
from tests.services import REDIS_URL, needs_postgres, needs_redis

ROOT = Path(__file__).resolve().parents[2]


@needs_postgres
def test_django_suites_pass_on_postgresql():
    """The tests of Django's tables (keys, permissions, users) again, in PostgreSQL."""
    code, output = side_run(POSTGRES_TEST).result()
    assert code == 0, output[-4000:]
    assert " passed" in output.strip().splitlines()[-1]


@needs_redis
def test_a_real_worker_runs_tasks_through_redis(memory_db, embedded_mongo):
    env = {
        **os.environ,
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_RESULT_BACKEND": REDIS_URL,
        "MONGODB_URI": embedded_mongo.uri,
        "MONGODB_DB": memory_db,
    }
    worker = start_worker(env)
    client = Celery(broker=REDIS_URL, backend=REDIS_URL)
    try:
        started = time.monotonic()
        result = client.send_task("memory_admin.tasks.check_store").get(timeout=60)
        assert result == {"store": "ok"}
        assert time.monotonic() - started < 60
    finally:
        kill_worker(worker)
        client.close()
