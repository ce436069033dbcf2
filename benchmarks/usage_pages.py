"""The usage page, the dashboard's rankings, a scope's cost-and-health panel and
`GET /api/v1/agents/{id}/usage`, timed in-process with the store commands per render.

Each size seeds `seed`'s individual scopes, then usage counters as 30 days of jobs
would leave them: per scope and day, per agent, prompt and model, and the per-day
rankings. The reads are bounded by days, not scopes, so the commands per render
must not change with the number of scopes. `python -m benchmarks usage_pages
--sizes 10000,100000` (observation counts; 10 per scope).
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.test import RequestFactory

from benchmarks.harness import CommandCounter, embedded_server, print_row, print_table, summary_ms
from benchmarks.ui_pages import AGENT, CALLS, measure, render, seeded_store
from memory_admin.api.v1.usage import UsageQuery, get_usage
from streams.core.documents import utcnow
from streams.records.usage import BACKLOG
from streams.store import MemoryStore
from streams.store.client import close_clients, get_client
from streams.store.usage import TOP_KEPT, usage_id

SIZES = [(1_000, 10_000), (10_000, 100_000)]
DAYS = 30
ACTIVE_SCOPES_PER_DAY = 500  # scopes with a consolidation on a given day


def seed_usage(store: MemoryStore, scope_ids: list[str]) -> float:
    started = time.perf_counter()
    rng = random.Random(2)
    today = utcnow().date()
    docs: list[dict[str, Any]] = []
    for back in range(DAYS):
        day = (today - timedelta(days=back)).isoformat()
        active = rng.sample(scope_ids, min(ACTIVE_SCOPES_PER_DAY, len(scope_ids)))
        costs = {s: rng.randint(100, 5_000) for s in active}
        for scope_id, cost in costs.items():
            docs.append(
                {
                    "_id": usage_id(AGENT, day, "scope", scope_id),
                    "agent_id": AGENT,
                    "day": day,
                    "dim": "scope",
                    "key": scope_id,
                    "jobs": 1,
                    "calls": 1,
                    "prompt_tokens": 400,
                    "completion_tokens": 60,
                    "cost_micro": cost,
                    "observations": 3,
                }
            )
        total = {"jobs": len(active), "calls": len(active), "cost_micro": sum(costs.values())}
        for dim, key in (("agent", ""), ("prompt", "consolidation v0"), ("model", "gpt-4o-mini")):
            docs.append(
                {
                    "_id": usage_id(AGENT, day, dim, key),
                    "agent_id": AGENT,
                    "day": day,
                    "dim": dim,
                    "key": key,
                    **total,
                }
            )
        top = sorted(costs.items(), key=lambda kv: kv[1], reverse=True)[:TOP_KEPT]
        store.seeding.insert_one(
            "usage_top",
            {
                "_id": day,
                "version": 1,
                "items": [{"scope_id": s, "agent_id": AGENT, "value": v} for s, v in top],
            },
        )
    scoped = [d for d in docs if d["dim"] == "scope"]
    store.seeding.insert_many("usage", [d for d in docs if d["dim"] != "scope"])
    for start in range(0, len(scoped), 5_000):
        store.seeding.insert_many("usage_scopes", scoped[start : start + 5_000])
    backlog = [{"scope_id": s, "agent_id": AGENT, "value": 5} for s in scope_ids[:TOP_KEPT]]
    store.seeding.insert_one("usage_top", {"_id": BACKLOG, "version": 1, "items": backlog})
    return time.perf_counter() - started


def _api_call() -> Any:
    request = SimpleNamespace(auth=SimpleNamespace(agent_scope=None))
    return get_usage(request, AGENT, UsageQuery(days=30))  # type: ignore[arg-type]


def run(sizes: list[int] | None = None) -> None:
    chosen = [(max(1, n // 10), n) for n in sizes] if sizes else SIZES
    rows: list[list[object]] = []
    factory = RequestFactory()
    with embedded_server() as server:
        counter = CommandCounter()
        close_clients()
        client = get_client(server.uri, event_listeners=[counter])
        settings.MONGODB_URI = server.uri
        for scopes, observations in chosen:
            db = f"bench_ui_{observations}"  # the ui_pages database: one seed serves both
            settings.MONGODB_DB = db
            store = seeded_store(client, db, scopes, observations)
            if store.seeding.find_one("usage_top", {"_id": BACKLOG}) is None:
                ids = [
                    str(d["_id"])
                    for d in store.seeding.find(
                        "scopes",
                        {"agent_id": AGENT, "seq": {"$gte": 1, "$lte": scopes}},
                        {"_id": 1},
                        limit=scopes,
                    )
                ]
                print(f"seeded 30 days of usage in {seed_usage(store, ids):.0f} s")
            some = store.seeding.find_one("scopes", {"agent_id": AGENT, "seq": scopes // 2})
            assert some is not None, "seeded above"
            detail = f"/scopes/{some['_id']}/"
            pages = {
                "usage page, 30 days": f"/usage/?agent={AGENT}&days=30",
                "dashboard (with rankings)": "/",
                "scope detail (cost and health)": detail,
            }
            calls: dict[str, Any] = {
                label: (lambda p=path: render(factory, p, {})) for label, path in pages.items()
            }
            calls["GET /agents/{id}/usage?days=30"] = _api_call
            for label, call in calls.items():
                samples, commands = measure(call, counter)
                p50, p95, mean = summary_ms(samples)
                rows.append(
                    [
                        f"{scopes:,}",
                        label,
                        CALLS,
                        f"{p50:.1f}",
                        f"{p95:.1f}",
                        f"{mean:.1f}",
                        f"{commands:g}",
                    ]
                )
                print_row(rows[-1])
        close_clients()
    print_table(
        "Usage renders (in-process) on the embedded store",
        ["scopes", "page", "renders", "p50 ms", "p95 ms", "mean ms", "store commands/render"],
        rows,
    )
