"""Ingest over HTTP: `POST .../messages` p50/p95 and messages per second of one web process.

One gunicorn worker (sync) on embedded defaults (in-process tasks: a request
that completes a session's 45th message also runs its formation, with the
offline provider), against a store seeded with N observations. Requests carry
5 messages each and rotate over sessions, so every ninth request of a session
triggers a formation, as real traffic would.
"""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_row, print_table, summary_ms, web_process
from benchmarks.seed import seed
from streams.store import MemoryStore

ROOT = Path(__file__).resolve().parent.parent
SIZES = [1_000, 1_000_000]
REQUESTS = 270
MESSAGES_PER_REQUEST = 5
AGENT = "bench-agent"


def run(sizes: list[int] | None = None) -> None:
    rows = []
    with embedded_server() as server:
        for size in sizes or SIZES:
            db = f"bench_ingest_{size}"
            client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
            seed(
                MemoryStore(client, db),
                agent_id=AGENT,
                scopes=max(10, min(size // 10, 100_000)),
                observations=size,
            )
            latencies, wall = _drive(server.uri, db)
            p50, p95, mean = summary_ms(latencies)
            messages = REQUESTS * MESSAGES_PER_REQUEST
            jobs = MemoryStore(client, db).seeding.count("jobs", {"status": "succeeded"})
            rows.append(
                [
                    f"{size:,}",
                    REQUESTS,
                    f"{p50:.1f}",
                    f"{p95:.1f}",
                    f"{mean:.1f}",
                    f"{messages / wall:.0f}",
                    jobs,
                ]
            )
            print_row(rows[-1])
            client.close()
    print_table(
        "Ingest over HTTP, one gunicorn worker, 5 messages per request, embedded store",
        [
            "observations stored",
            "requests",
            "p50 ms",
            "p95 ms",
            "mean ms",
            "messages/s",
            "jobs run (formation, consolidation)",
        ],
        rows,
    )


def _drive(mongo_uri: str, db: str) -> tuple[list[float], float]:
    with web_process(mongo_uri, db) as web:
        conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=60)
        headers = {"Authorization": f"Bearer {web.api_key}", "Content-Type": "application/json"}
        latencies = []
        started = time.perf_counter()
        for n in range(REQUESTS):
            session, turn = n % 30, n // 30
            body = json.dumps(
                {
                    "user_id": f"bench-user-{session}",
                    "user_name": f"User {session}",
                    "groups": [{"id": "g1", "name": "Eden Team"}],
                    "messages": [
                        {
                            "id": f"t{turn}-m{i}",
                            "role": "user" if i % 2 == 0 else "assistant",
                            "content": "I prefer short answers. Our team deploys on Fridays.",
                        }
                        for i in range(MESSAGES_PER_REQUEST)
                    ],
                }
            )
            t0 = time.perf_counter()
            conn.request(
                "POST", f"/api/v1/agents/{AGENT}/sessions/s{session}/messages", body, headers
            )
            response = conn.getresponse()
            response.read()
            latencies.append(time.perf_counter() - t0)
            assert response.status == 202, response.status
        return latencies, time.perf_counter() - started
