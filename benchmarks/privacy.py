"""The audit log and forget user at scale.

Audit log: N entries over 30 days (one busy ingest key holds most of them, a few
people and keys the rest); each row pages the log the way the UI and the API do,
first pages and a page deep behind a cursor, counting store round trips. A page
is served by bounded `_id` windows, so neither must grow with the log.

Forget user: an agent seeded with N observations in N/10 individual scopes, plus a
group scope of 300 observations and 30 versions to which the forgotten user
contributed 10 observations; the forget job removes the user's scope and rebuilds
the group, with the offline provider (one consolidation call).
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import (
    CommandCounter,
    bound_work,
    embedded_server,
    print_row,
    print_table,
    summary_ms,
)
from benchmarks.seed import seed
from streams.core.documents import Observation, utcnow
from streams.core.documents_audit import AuditEntry
from streams.jobs import job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import append_in_transaction
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.people.privacy import forget_user_request, forget_user_run
from streams.people.user_audit import user_audit
from streams.records.audit import audit_page
from streams.store import MemoryStore
from streams.store.audit import _id_at

AUDIT_SIZES = [10_000, 100_000, 1_000_000]
FORGET_SIZES = [10_000, 100_000, 1_000_000]
REPEAT = 15
BATCH = 5000
AGENT = "bench-agent"
DAYS = 30


def run(sizes: list[int] | None = None) -> None:
    run_audit(sizes)
    run_forget(sizes)


# -- audit log ----------------------------------------------------------------------------


def _seed_audit(store: MemoryStore, size: int) -> None:
    rng = random.Random(7)
    now = utcnow()
    span = DAYS * 86400
    people = [f"ui:person-{i}" for i in range(10)]
    actions = ["scope.update", "observation.update", "observation.delete", "prompt.save"]
    batch: list[dict] = []
    for i in range(size):
        at = now - timedelta(seconds=span * (size - i) / size)
        if i % 1000 == 0:
            actor, action = "ui:rare-person", "user.forget"
        elif rng.random() < 0.8:
            actor, action = "api:ingest", "session.ingest"
        else:
            actor, action = rng.choice(people), rng.choice(actions)
        entry = AuditEntry(
            actor=actor,
            action=action,
            object_type=action.split(".")[0],
            object_id=f"obj-{rng.randrange(size // 5 + 1)}",
            agent_id=AGENT,
            summary={"accepted": 3},
            at=at,
        )
        doc = entry.to_mongo()
        doc["_id"] = _id_at(at)
        batch.append(doc)
        if len(batch) >= BATCH:
            store.seeding.insert_many("audit", batch, ordered=False)
            batch.clear()
    if batch:
        store.seeding.insert_many("audit", batch, ordered=False)
    store.seeding.update_one(
        "audit_meta",
        {"_id": "log"},
        {"$min": {"started_at": now - timedelta(days=DAYS)}},
        upsert=True,
    )


def run_audit(sizes: list[int] | None = None) -> None:
    headers = ["entries", "query", "p50 ms", "p95 ms", "round trips", "rows"]
    rows: list[list[object]] = []
    with embedded_server() as server:
        for size in sizes or AUDIT_SIZES:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            store = MemoryStore(client, f"bench_audit_{size}")
            store.ensure_indexes()
            started = time.perf_counter()
            _seed_audit(store, size)
            print(f"seeded {size} audit entries in {time.perf_counter() - started:.0f} s")
            deep = audit_page(store=store, actor="api:ingest", limit=50)
            for _ in range(9):
                deep = audit_page(store=store, actor="api:ingest", cursor=deep.next_cursor)
            cases: dict[str, dict[str, Any]] = {
                "newest 50": {},
                "actor (busy key)": {"actor": "api:ingest"},
                "actor (a person)": {"actor": "ui:person-3"},
                "actor (rare)": {"actor": "ui:rare-person"},
                "action (rare)": {"action": "user.forget"},
                "object id": {"object_id": "obj-17"},
                "busy key, page 11": {"actor": "api:ingest", "cursor": deep.next_cursor},
            }
            for name, query in cases.items():
                samples, trips = [], 0
                for _ in range(REPEAT):
                    counter.reset()
                    t0 = time.perf_counter()
                    page = audit_page(store=store, limit=50, **query)
                    samples.append(time.perf_counter() - t0)
                    trips = counter.count
                p50, p95, _ = summary_ms(samples)
                row = [size, name, f"{p50:.1f}", f"{p95:.1f}", trips, len(page.items)]
                print_row(row)
                rows.append(row)
            client.close()
    print_table("Audit log pages (limit 50)", headers, rows)


# -- forget user --------------------------------------------------------------------------


def _shared_group(store: MemoryStore, user_id: str) -> str:
    """A group of 300 observations over 30 versions; the user's 10 are in versions 21-30."""
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "bench-group"))
    for version in range(30):
        scope = scope_get(store=store, scope_id=group.id)
        now = utcnow()
        observations = [
            Observation(
                scope_id=group.id,
                agent_id=AGENT,
                content=f"Team note {version}-{i}: deploys on Friday, standup at nine.",
                related_user_ids=[user_id if version >= 20 and i == 0 else f"other-{i}"],
            )
            for i in range(10)
        ]
        append_in_transaction(store=store, scope_id=group.id, observations=observations, now=now)
        scope = scope_get(store=store, scope_id=group.id)
        consolidation_commit(
            store=store,
            scope=scope,
            expected_version=scope.consolidation_version,
            text=f"The team deploys on Friday (version {version + 1}).",
            absorbed_ids=[o.id for o in observations],
            trigger="threshold",
            actor=None,
        )
    return group.id


def run_forget(sizes: list[int] | None = None) -> None:
    headers = [
        "observations",
        "removed",
        "forget s",
        "round trips",
        "LLM calls",
        "user audit ms",
        "user audit trips",
    ]
    rows: list[list[object]] = []
    with embedded_server() as server:
        for size in sizes or FORGET_SIZES:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            store = MemoryStore(client, f"bench_forget_{size}")
            seconds = seed(store, agent_id=AGENT, scopes=max(10, size // 10), observations=size)
            print(f"seeded {size} observations in {seconds:.0f} s")
            user_id = "bench-user-7"
            _shared_group(store, user_id)
            audits = []
            for _ in range(REPEAT):
                counter.reset()
                t0 = time.perf_counter()
                user_audit(store=store, agent_id=AGENT, user_id=user_id)
                audits.append(time.perf_counter() - t0)
            audit_trips = counter.count
            job = forget_user_request(store=store, agent_id=AGENT, user_id=user_id, actor="bench")
            counter.reset()
            t0 = time.perf_counter()
            run = job_execute(
                store=store,
                job_id=job.id,
                llm=OfflineProvider(),
                work=bound_work(forget_user_run, store=store),
            )
            elapsed = time.perf_counter() - t0
            assert run is not None
            removed = sum(run.result["deleted"].values())
            p50, _, _ = summary_ms(audits)
            row = [
                size,
                removed,
                f"{elapsed:.2f}",
                counter.count,
                run.llm.calls,
                f"{p50:.1f}",
                audit_trips,
            ]
            print_row(row)
            rows.append(row)
            client.close()
    print_table("Forget user (offline provider) and the user audit read", headers, rows)
