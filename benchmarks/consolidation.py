"""Consolidations per second: real Celery workers through Redis, the LLM answering instantly.

Scopes with 5 pending observations each get one consolidation job; the clock
runs from sending the tasks until every job has succeeded. The fake
OpenAI-compatible server answers at once, so this measures our side: the lease,
the store reads, the commit transaction, the history entry, the job bookkeeping.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis
from bson import ObjectId
from celery import Celery
from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_row, print_table
from streams.core.documents import Observation, Scope, utcnow
from streams.jobs import job_create
from streams.store import MemoryStore
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.workers import kill_worker, start_worker

BROKER = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
SCOPES = 200
PENDING = 5
WORKER_COUNTS = [1, 2]


def run(sizes: list[int] | None = None) -> None:
    rows = []
    fake = FakeOpenAI().start()
    fake.set_responder(lambda request: "A consolidated memory of this user.")
    try:
        with embedded_server() as server:
            for workers in WORKER_COUNTS:
                db = f"bench_consolidation_{workers}"
                client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
                store = MemoryStore(client, db)
                job_ids = _seed(store)
                elapsed = _drive(server.uri, db, fake.base_url, workers, job_ids, store)
                calls = len(fake.chat_requests)
                fake.reset()
                fake.set_responder(lambda request: "A consolidated memory of this user.")
                rows.append([workers, SCOPES, f"{elapsed:.1f}", f"{SCOPES / elapsed:.1f}", calls])
                print_row(rows[-1])
                client.close()
    finally:
        fake.stop()
    print_table(
        "Consolidations per second, Celery workers (solo pool) through Redis, instant fake LLM",
        ["workers", "consolidations", "seconds", "per second", "LLM calls"],
        rows,
    )


def _seed(store: MemoryStore) -> list[str]:
    store.ensure_indexes()
    now = utcnow()
    store.agents.ensure("bench-agent", now=now)
    job_ids = []
    for i in range(SCOPES):
        observations = [
            Observation(
                scope_id="0" * 24,
                agent_id="bench-agent",
                content=f"Fact {n} of user {i}.",
                seq=n + 1,
            )
            for n in range(PENDING)
        ]
        scope = Scope(
            agent_id="bench-agent",
            scope_type="individual",
            user_id=f"u{i}",
            seq=i + 1,
            observation_seq=PENDING,
            observation_count=PENDING,
            pending_observation_ids=[o.id for o in observations],
        )
        for observation in observations:
            observation.scope_id = scope.id
        store.seeding.insert_one("scopes", scope.to_mongo())
        store.seeding.insert_many("observations", [o.to_mongo() for o in observations])
        job = job_create(
            store=store,
            kind="consolidation",
            agent_id="bench-agent",
            scope_id=scope.id,
            trigger="benchmark",
        )
        job_ids.append(job.id)
    return job_ids


def _drive(
    mongo_uri: str, db: str, llm_url: str, workers: int, job_ids: list[str], store: MemoryStore
) -> float:
    redis.Redis.from_url(BROKER).flushdb()
    env = {
        **os.environ,
        "CELERY_BROKER_URL": BROKER,
        "MONGODB_URI": mongo_uri,
        "MONGODB_DB": db,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": llm_url,
        "LOG_LEVEL": "WARNING",
    }
    processes = [start_worker(env) for _ in range(workers)]
    app = Celery(broker=BROKER)
    try:
        time.sleep(4)  # let the workers connect before the clock starts
        started = time.perf_counter()
        for job_id in job_ids:
            app.send_task("memory_admin.tasks.run_consolidation", args=[job_id])
        oids = [ObjectId(j) for j in job_ids]
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            done = store.seeding.count("jobs", {"_id": {"$in": oids}, "status": "succeeded"})
            if done == len(job_ids):
                return time.perf_counter() - started
            time.sleep(0.05)
        raise RuntimeError("the consolidations did not finish in 10 minutes")
    finally:
        for process in processes:
            kill_worker(process)
        app.close()
