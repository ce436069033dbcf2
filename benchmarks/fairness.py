"""One caller cannot stall everyone: context p95 on a quiet server beside context p95 while
two clients send maximum-size messages (4 x MEMORY_MESSAGE_MAX_CHARS each request, so
every request starts a formation), in one run. The ratio is the figure (goal: < 2x).

Two gunicorn sync workers on embedded defaults (formation in the in-process pool, the
offline provider), a store seeded with 1,000 observations. BENCH_SECONDS sets each
phase's length (default 15), split into BENCH_ROUNDS (5) alternating quiet and loaded
windows, the formations of each loaded window drained before the next quiet one;
BENCH_THREADS sets gunicorn's threads per worker (1); BENCH_WEB_ENV="K=V,K=V" adds
settings to the web process.
"""

from __future__ import annotations

import os
import time
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_table, summary_ms, web_process
from benchmarks.http_clients import AGENT, Tally, context_call, drive, ingest_call
from benchmarks.seed import seed
from streams.store import MemoryStore

OBSERVATIONS = 1_000
MAX_CHARS = 32_000
MESSAGES_PER_REQUEST = 4
DRAIN_SECONDS = 120


def run(sizes: list[int] | None = None) -> None:
    seconds = float(os.environ.get("BENCH_SECONDS", "15"))
    with embedded_server() as server:
        db = "bench_fairness"
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        store = MemoryStore(client, db)
        seed(store, agent_id=AGENT, scopes=100, observations=(sizes or [OBSERVATIONS])[0])
        extra = dict(
            item.split("=", 1) for item in os.environ.get("BENCH_WEB_ENV", "").split(",") if item
        )
        threads = int(os.environ.get("BENCH_THREADS", "1"))
        rounds = max(int(os.environ.get("BENCH_ROUNDS", "5")), 1)
        window = seconds / rounds
        quiet, loaded, senders = Tally(), Tally(), Tally()
        formed = 0
        drained = 0.0
        with web_process(server.uri, db, workers=2, threads=threads, extra_env=extra) as web:
            drive(web, 2, [context_call])  # warm-up

            def sender(name: str):
                return lambda c, n: ingest_call(
                    c, f"{name}-{n}", n, size=MAX_CHARS, count=MESSAGES_PER_REQUEST
                )

            # Quiet and loaded windows alternate, and each loaded window's formations drain
            # before the next quiet one: a shared machine's load drifts over a minute, and
            # both sides of the ratio then see the same drift.
            for r in range(rounds):
                (q,) = drive(web, window, [context_call])
                base = _succeeded(store)
                c, first, second = drive(
                    web, window, [context_call, sender(f"a{r}"), sender(f"b{r}")]
                )
                _merge(quiet, q)
                _merge(loaded, c)
                _merge(senders, first)
                _merge(senders, second)
                formed += _succeeded(store) - base
                drained += _drain(store)
        formations = store.seeding.count("jobs", {"kind": "formation"})
        formed_after = store.seeding.count("jobs", {"kind": "formation", "status": "succeeded"})
        client.close()
    q95, l95 = summary_ms(quiet.latencies)[1], summary_ms(loaded.latencies)[1]
    rows = [
        _row("context, quiet", quiet),
        _row("context, 2 max-size senders", loaded),
        _row("ingest 4 x 32,000 chars", senders),
    ]
    print_table(
        f"Fairness: 2 gunicorn workers x {threads} thread(s), embedded store, {seconds:.0f} s "
        f"per phase in {rounds} alternating windows, {formations} formations started, "
        f"{formed} done during the loaded windows, {formed_after} after {drained:.0f} s of "
        "draining; "
        f"context p95 ratio loaded/quiet = {l95 / q95:.2f}x",
        ["calls", "requests", "p50 ms", "p95 ms", "errors"],
        rows,
    )


def _row(calls: str, tally: Tally) -> list[object]:
    p50, p95, _ = summary_ms(tally.latencies)
    return [calls, len(tally.latencies), f"{p50:.1f}", f"{p95:.1f}", tally.errors]


def _merge(into: Tally, tally: Tally) -> None:
    into.latencies.extend(tally.latencies)
    for status, n in tally.statuses.items():
        into.statuses[status] = into.statuses.get(status, 0) + n


def _succeeded(store: MemoryStore) -> int:
    return store.seeding.count("jobs", {"kind": "formation", "status": "succeeded"})


def _drain(store: MemoryStore) -> float:
    """Wait (at most DRAIN_SECONDS) until no formation is queued or running; the wait."""
    started = time.monotonic()
    while time.monotonic() - started < DRAIN_SECONDS and store.seeding.find_one(
        "jobs", {"kind": "formation", "status": {"$in": ["queued", "running"]}}
    ):
        time.sleep(0.5)
    return time.monotonic() - started
