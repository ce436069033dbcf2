"""Chat proxy overhead: the `openai` client calling the fake upstream directly vs through
`POST /api/v1/agents/{id}/chat/completions`, non-streaming and time to first streamed chunk.

One gunicorn process (`gthread`, 8 threads: what streaming needs) on embedded defaults
with in-process tasks, so each call's ingest job runs in the web process after its
answer is sent. The upstream is the test suite's fake OpenAI server, which answers at
once, so the difference is what the proxy adds: auth, the context (retrieval off: a
greeting; on: a recall question over the user's memory), the forward, and the relay.
Each call uses its own session, so no formation runs in the middle of the measurement.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from functools import partial

import httpx2 as httpx
import openai
from pymongo import MongoClient

from benchmarks.harness import (
    embedded_server,
    print_row,
    print_table,
    summary_ms,
    web_process,
)
from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.fakes.openai_server import FakeOpenAI

AGENT = "bench-agent"
USER = "bench-user"
CALLS = 100
WARMUP = 10
PAUSE = float(os.environ.get("BENCH_CHAT_PAUSE", "0"))  # seconds between calls
OBSERVATIONS = 200  # in the user's memory (what retrieval searches)
GREETING = "good morning, how are you today"
RECALL = "what did I tell you about the Rust parser?"


def run(sizes: list[int] | None = None) -> None:
    """`--sizes N` sets the number of timed calls per row (default 100)."""
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    calls = (sizes or [CALLS])[0]
    rows: list[list[object]] = []
    with FakeOpenAI() as upstream, embedded_server() as server:
        db = "bench_chat_proxy"
        _seed(MemoryStore(MongoClient(server.uri, tz_aware=True), db))
        direct = openai.OpenAI(base_url=upstream.base_url, api_key="x", max_retries=0)
        upstream_env = {
            "MEMORY_CHAT_UPSTREAM_BASE_URL": upstream.base_url,
            "MEMORY_CHAT_UPSTREAM_API_KEY": "upstream",
        }
        with web_process(server.uri, db, threads=8, extra_env=upstream_env) as web:
            proxy = openai.OpenAI(
                base_url=f"http://127.0.0.1:{web.port}/api/v1/agents/{AGENT}",
                api_key=web.api_key,
                max_retries=0,
            )
            cases: list[tuple[str, openai.OpenAI, str]] = [
                ("direct to the fake upstream", direct, GREETING),
                ("proxy, retrieval off", proxy, GREETING),
                ("proxy, retrieval on", proxy, RECALL),
            ]
            context = httpx.Client(
                base_url=f"http://127.0.0.1:{web.port}/api/v1/agents/{AGENT}",
                headers={"Authorization": f"Bearer {web.api_key}"},
            )
            for label, message in (("retrieval off", GREETING), ("retrieval on", RECALL)):
                samples = _sample(partial(_context, context, message), calls)
                p50, p95, _ = summary_ms(samples)
                row = [f"POST /context alone, {label}", "answer", calls, f"{p50:.1f}", f"{p95:.1f}"]
                print_row([*row, "(part of the overhead)"])
                rows.append([*row, "(part of the overhead)"])
            baseline: dict[str, float] = {}
            for label, client, message in cases:
                for mode, measure in (("non-streaming", _complete), ("first chunk", _first)):
                    samples = _sample(partial(measure, client, message), calls)
                    p50, p95, _ = summary_ms(samples)
                    if client is direct:
                        baseline[mode] = p50
                    overhead = f"+{p50 - baseline[mode]:.1f}" if client is not direct else "–"
                    row = [label, mode, calls, f"{p50:.1f}", f"{p95:.1f}", overhead]
                    print_row(row)
                    rows.append(row)
    print_table(
        "Chat proxy overhead (ms; fake upstream answering at once; one gunicorn gthread "
        f"process; {OBSERVATIONS} observations in the user's memory)",
        ["path", "measure", "calls", "p50", "p95", "p50 overhead"],
        rows,
    )


def _sample(call: Callable[[int], float], calls: int) -> list[float]:
    """Seconds per call, as each call measures itself (after a warm-up)."""
    for i in range(WARMUP):
        call(-1 - i)
    samples = []
    for i in range(calls):
        samples.append(call(i))
        time.sleep(PAUSE)
    return samples


def _metadata(i: int) -> dict[str, str]:
    return {"user_id": USER, "user_name": "Gene", "session_id": f"bench-{time.time_ns()}-{i}"}


def _complete(client: openai.OpenAI, message: str, i: int) -> float:
    started = time.perf_counter()
    answer = client.chat.completions.create(
        model="fake", messages=[{"role": "user", "content": message}], metadata=_metadata(i)
    )
    elapsed = time.perf_counter() - started
    assert answer.choices[0].message.content
    return elapsed


def _context(client: httpx.Client, message: str, i: int) -> float:
    body = {"user_id": USER, "user_name": "Gene", "message": message}
    started = time.perf_counter()
    response = client.post("/context", json=body)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text
    return elapsed


def _first(client: openai.OpenAI, message: str, i: int) -> float:
    """Time to the first chunk; the rest of the stream is read outside the timing."""
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="fake",
        messages=[{"role": "user", "content": message}],
        metadata=_metadata(i),
        stream=True,
    )
    iterator = iter(stream)
    next(iterator)
    elapsed = time.perf_counter() - started
    for _ in iterator:
        pass
    return elapsed


def _seed(store: MemoryStore) -> None:
    store.ensure_indexes()
    scope, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, USER), display_name="Gene"
    )
    consolidation_edit(
        store=store,
        scope=scope,
        text="Gene maintains a Rust parser and prefers short answers.",
        expected_version=0,
        actor="bench",
    )
    topics = ["Rust parser", "garden", "cat", "Lisbon trip", "tea", "deploys", "chess"]
    for n in range(OBSERVATIONS):
        observation_add(
            store=store, scope=scope, content=f"Gene talked about the {topics[n % 7]} ({n})."
        )
