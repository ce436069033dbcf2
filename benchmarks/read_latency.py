"""Read path latency: context (retrieval off and on) and search, in-process and over HTTP.

Each size seeds a fresh database (`seed`: N observations over N/10 individual scopes,
at most 100,000, search index included), then gives one target user a heavy log
(5,000 observations), a consolidation and 10 pending observations, two groups and
the collective scope with two shards, all with consolidations and logs of their own.
It then times the calls and counts the store round trips per call. At the largest
size it also prints where the time of a retrieval call goes (server time per command,
and a cProfile of the client side).
"""

from __future__ import annotations

import cProfile
import http.client
import io
import json
import pstats
import random
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import (
    CommandCounter,
    embedded_server,
    print_row,
    print_table,
    summary_ms,
    web_process,
)
from benchmarks.seed import WORDS, seed
from streams.context.assemble import context_assemble
from streams.core.documents import Observation, utcnow
from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.search.index import search_index_build, search_observations
from streams.store import MemoryStore

ROOT = Path(__file__).resolve().parent.parent
SIZES = [1_000, 100_000, 1_000_000]
CALLS = 200
HEAVY = 5_000
AGENT = "bench-agent"
USER = "target-user"
GROUPS = [("g-eden", "Eden Team"), ("g-ops", "Ops")]


HEADERS = [
    "observations",
    "via",
    "call",
    "calls",
    "p50 ms",
    "p95 ms",
    "mean ms",
    "round trips/call",
    "store ms/call",
]
P95s = dict[tuple[str, str], dict[int, float]]  # (via, call) -> size -> p95


def run(sizes: list[int] | None = None) -> None:
    rows: list[list[object]] = []
    p95s: P95s = {}
    sizes = sizes or SIZES
    with embedded_server() as server:
        for size in sizes:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            db = f"bench_read_{size}"
            store = MemoryStore(client, db)
            held = _seeded(store, size)
            print(f"measuring with {held}", flush=True)
            for label, call in _calls(store).items():
                samples, trips, store_ms = _measure(call, counter)
                rows.append(
                    _row(held, "in-process", label, samples, f"{trips:g}", f"{store_ms:.1f}")
                )
                p95s.setdefault(("in-process", label), {})[size] = summary_ms(samples)[1]
                print_row(rows[-1])
            for label, (samples, http_trips) in _http(server.uri, db).items():
                rows.append(_row(held, "HTTP", label, samples, http_trips, "-"))
                p95s.setdefault(("HTTP", label), {})[size] = summary_ms(samples)[1]
                print_row(rows[-1])
            if size == sizes[-1]:
                _profile(store, counter)
            client.close()
    print_table(
        "Read path on the embedded store (2 cores): context and search latency, round trips",
        HEADERS,
        rows,
    )
    if len(sizes) > 1:
        _print_growth(p95s, sizes[0], sizes[-1])


def _seeded(store: MemoryStore, size: int) -> str:
    """Seed the store (unless BENCH_DATA_DIR kept it seeded) and the target user; what it
    holds, to the nearest thousand (a reused store may hold less than asked, if its
    seeding was cut short)."""
    if store.agents.get(AGENT) is None:
        seconds = seed(
            store,
            agent_id=AGENT,
            scopes=max(10, min(size // 10, 100_000)),
            observations=size,
        )
        print(f"seeded {size:,} observations in {seconds:.0f} s", flush=True)
    if store.scopes.find_by_identity(**ScopeKey.individual(AGENT, USER).identity()) is None:
        # A cut-short seed never set the agent's scope counter: new scopes go after.
        seeded_scopes = store.seeding.estimated_count("scopes")
        store.seeding.update_one("agents", {"_id": AGENT}, {"$max": {"scope_seq": seeded_scopes}})
        _prepare(store)
    stored = round(store.seeding.estimated_count("observations"), -3)
    scopes = store.seeding.estimated_count("scopes")
    return f"{stored:,} ({scopes:,} scopes)"


def _row(
    held: str, via: str, label: str, samples: list[float], trips: object, store_ms: str
) -> list[object]:
    p50, p95, mean = summary_ms(samples)
    return [held, via, label, CALLS, f"{p50:.1f}", f"{p95:.1f}", f"{mean:.1f}", trips, store_ms]


def _print_growth(p95s: P95s, first: int, last: int) -> None:
    print_table(
        f"p95 of the last size ({last:,} asked) over p95 of the first ({first:,} asked)",
        ["via", "call", "p95 first", "p95 last", "ratio"],
        [
            [via, label, f"{by[first]:.1f}", f"{by[last]:.1f}", f"{by[last] / by[first]:.2f}"]
            for (via, label), by in p95s.items()
            if first in by and last in by
        ],
    )


def _prepare(store: MemoryStore) -> None:
    """The target user's memory: a heavy log, consolidations everywhere, pending items."""
    rng = random.Random(7)
    now = utcnow()
    scopes = [
        scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, USER), display_name="Gene")[
            0
        ],
        *(
            scope_get_or_create(store=store, key=ScopeKey.group(AGENT, g), display_name=n)[0]
            for g, n in GROUPS
        ),
        scope_get_or_create(store=store, key=ScopeKey.collective(AGENT))[0],
        *(
            scope_get_or_create(store=store, key=ScopeKey.collective(AGENT, name))[0]
            for name in ("feedback", "bugs")
        ),
    ]
    for scope, count in zip(scopes, [HEAVY, 500, 500, 500, 200, 200], strict=True):
        logged = [
            Observation(
                scope_id=scope.id,
                agent_id=AGENT,
                content=" ".join(rng.choice(WORDS) for _ in range(12)),
                observed_at=now - timedelta(hours=seq),
                created_at=now,
                consolidated=True,
                seq=seq,
            )
            for seq in range(1, count + 1)
        ]
        for start in range(0, count, 5000):
            store.seeding.insert_many(
                "observations", [o.to_mongo() for o in logged[start : start + 5000]]
            )
        search_index_build(store=store, observations=logged)
        store.seeding.update_one(
            "scopes",
            {"_id": ObjectId(scope.id)},
            {"$set": {"observation_seq": count, "observation_count": count}},
        )
        words = " ".join(rng.choice(WORDS) for _ in range(350))
        fresh = store.scopes.get(ObjectId(scope.id))
        assert fresh is not None, "seeded above"
        consolidation_edit(
            store=store,
            scope=fresh,
            text=f"{scope.label} memory: {words}.",
            expected_version=0,
            actor="bench",
        )
    for n in range(10):
        observation_add(
            store=store,
            scope=scopes[0],
            content=f"Pending note {n}: " + " ".join(rng.choice(WORDS) for _ in range(10)),
            observed_at=now - timedelta(minutes=5 * n),
        )


def _questions() -> list[str]:
    rng = random.Random(3)
    return [
        f"Do you remember what I said about {rng.choice(WORDS)} and {rng.choice(WORDS)}?"
        for _ in range(CALLS)
    ]


def _calls(store: MemoryStore) -> dict[str, Callable[[int], object]]:
    questions = _questions()
    groups = list(GROUPS)
    return {
        "context, retrieval off": lambda i: context_assemble(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            user_name="Gene",
            groups=groups,
            message="Thanks, that helps a lot.",
        ),
        "context, retrieval on": lambda i: context_assemble(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            user_name="Gene",
            groups=groups,
            message=questions[i],
        ),
        "search (user + 2 groups)": lambda i: search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            group_ids=[g for g, _ in groups],
            query=questions[i].removeprefix("Do you remember what I said about ").rstrip("?"),
        ),
    }


def _measure(
    call: Callable[[int], object], counter: CommandCounter
) -> tuple[list[float], float, float]:
    for i in range(10):
        call(i)  # warm up
    samples = []
    counter.reset()
    for i in range(CALLS):
        t0 = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - t0)
    trips = counter.count / CALLS
    store_ms = sum(counter.micros.values()) / 1000 / CALLS
    return samples, trips, store_ms


def _profile(store: MemoryStore, counter: CommandCounter) -> None:
    call = _calls(store)["context, retrieval on"]
    counter.reset()
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(50):
        call(i)
    profiler.disable()
    print_table(
        "Where a retrieval call's store time goes (server-side duration per command, per call)",
        ["command", "ms/call"],
        [
            [name, f"{micros / 1000 / 50:.2f}"]
            for name, micros in sorted(counter.micros.items(), key=lambda kv: -kv[1])
        ],
    )
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(14)
    print("\ncProfile of 50 context calls with retrieval (client side), by cumulative time")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:4000])


def _http(mongo_uri: str, db: str) -> dict[str, tuple[list[float], str]]:
    questions = _questions()
    groups = [{"id": g, "name": n} for g, n in GROUPS]
    with web_process(mongo_uri, db) as web:
        headers = {"Authorization": f"Bearer {web.api_key}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=60)

        def context(message: str) -> tuple[str, str, str | None]:
            body = {"user_id": USER, "user_name": "Gene", "groups": groups, "message": message}
            return "POST", f"/api/v1/agents/{AGENT}/context", json.dumps(body)

        def search(i: int) -> tuple[str, str, str | None]:
            q = questions[i].removeprefix("Do you remember what I said about ").rstrip("?")
            query = urlencode({"q": q, "user_id": USER, "group_id": GROUPS[0][0]})
            return "GET", f"/api/v1/agents/{AGENT}/search?{query}", None

        plans: dict[str, Callable[[int], tuple[str, str, str | None]]] = {
            "context, retrieval off": lambda i: context("Thanks, that helps a lot."),
            "context, retrieval on": lambda i: context(questions[i]),
            "search (user + 1 group)": search,
        }
        results: dict[str, tuple[list[float], str]] = {}
        for label, plan in plans.items():
            samples = []
            for i in range(-10, CALLS):
                method, path, body = plan(max(i, 0))
                t0 = time.perf_counter()
                conn.request(method, path, body, headers)
                response = conn.getresponse()
                response.read()
                if i >= 0:
                    samples.append(time.perf_counter() - t0)
                assert response.status == 200, (response.status, label)
            results[label] = (samples, "as above")
        return results
