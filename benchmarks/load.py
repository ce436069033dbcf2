"""Bounded loopback load test: 1, 2, 4 and 8 clients of mixed ingest and context through
gunicorn (2 sync workers, embedded defaults, formation in the in-process pool).

Each client alternates a context call and an ingest of 5 short messages (every ninth
ingest of a session starts a formation). Per level: throughput, p50/p95 and errors.
BENCH_SECONDS sets each level's length (default 30; the shared machine used 10).
"""

from __future__ import annotations

import os
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_row, print_table, summary_ms, web_process
from benchmarks.http_clients import AGENT, Client, context_call, drive, ingest_call
from benchmarks.seed import seed
from streams.store import MemoryStore

LEVELS = [1, 2, 4, 8]
OBSERVATIONS = 1_000


def run(sizes: list[int] | None = None) -> None:
    seconds = float(os.environ.get("BENCH_SECONDS", "30"))
    rows = []
    with embedded_server() as server:
        db = "bench_load"
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        seed(MemoryStore(client, db), agent_id=AGENT, scopes=100, observations=OBSERVATIONS)
        with web_process(server.uri, db, workers=2) as web:
            drive(web, 2, [context_call])  # warm-up
            for level in LEVELS:
                tallies = drive(web, seconds, [_mixed(level, c) for c in range(level)])
                latencies = [s for t in tallies for s in t.latencies]
                p50, p95, _ = summary_ms(latencies)
                errors = sum(t.errors for t in tallies)
                rows.append(
                    [level, len(latencies), f"{len(latencies) / seconds:.1f}", f"{p50:.1f}",
                     f"{p95:.1f}", errors]
                )  # fmt: skip
                print_row(rows[-1])
        client.close()
    print_table(
        f"Load: mixed ingest + context through gunicorn (2 workers), {seconds:.0f} s per level",
        ["clients", "requests", "requests/s", "p50 ms", "p95 ms", "errors"],
        rows,
    )


def _mixed(level: int, client_no: int):
    def call(client: Client, n: int) -> tuple[float, int]:
        if n % 2 == 0:
            return context_call(client, n + client_no)
        session = f"load-{level}-{client_no}-{(n // 2) % 5}"
        return ingest_call(client, session, n, size=200, count=5)

    return call
