"""The legacy migration at scale: bounded reads of the old collections, and a full run.

Reads: `memory_sessions` with N documents (ids spread over a year, with one crowded
day holding a tenth of them); each row reads all of it in batches of 500 through the
adaptive `_id` windows, and reports the batch read time early and late in the scan.
A window matches about one batch, so late batches cost what early ones do.

Migration: N items for N/100 users of 2 agents with 2 shards each (directives,
suggestions, facts, episodes, the old mix), migrated once and then again (the rerun
writes nothing), with store round trips counted.
"""

from __future__ import annotations

import random
import struct
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import CommandCounter, embedded_server, print_row, print_table, summary_ms
from streams.legacy.migration import legacy_migrate
from streams.store import MemoryStore
from streams.store.legacy import LegacyReader

READ_SIZES = [10_000, 100_000]
MIGRATE_SIZES = [2_000, 10_000]
BATCH = 500
START = datetime(2024, 1, 1, tzinfo=UTC)


def run(sizes: list[int] | None = None) -> None:
    run_reads(sizes or READ_SIZES)
    run_migration(sizes or MIGRATE_SIZES)


def _oid(rng: random.Random, at: datetime):
    from bson import ObjectId

    return ObjectId(struct.pack(">I", int(at.timestamp())) + rng.randbytes(8))


def _item_times(rng: random.Random, size: int) -> list[datetime]:
    crowded = START + timedelta(days=200)
    times = [
        crowded + timedelta(seconds=rng.randrange(86400))
        if i % 10 == 0
        else START + timedelta(seconds=rng.randrange(365 * 86400))
        for i in range(size)
    ]
    return sorted(times)


def run_reads(sizes: list[int]) -> None:
    headers = ["legacy docs", "read index s", "batches", "queries", "total s", "docs/s",
               "first 20 p50 ms",
               "last 20 p50 ms", "last 20 p95 ms"]  # fmt: skip
    rows: list[list[object]] = []
    for size in sizes:
        rng = random.Random(size)
        with embedded_server() as server:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            coll = client["bench"]["memory_sessions"]
            docs = [
                {"_id": _oid(rng, at), "agent_id": "a", "memory_type": "fact", "content": "x" * 80}
                for at in _item_times(rng, size)
            ]
            for start in range(0, size, 5000):
                coll.insert_many(docs[start : start + 5000], ordered=False)
            reader = LegacyReader(client["bench"])
            began = time.perf_counter()
            reader.prepare()  # the `_id`-led read index, as the migration creates it
            index_seconds = time.perf_counter() - began
            counter.reset()
            timings: list[float] = []
            read = 0
            began = time.perf_counter()
            last = began
            for batch in reader.batches("memory_sessions", batch_size=BATCH):
                now = time.perf_counter()
                timings.append(now - last)
                last = now
                read += len(batch)
            total = time.perf_counter() - began
            assert read == size, (read, size)
            first, late = summary_ms(timings[:20]), summary_ms(timings[-20:])
            row = [size, f"{index_seconds:.1f}", len(timings), counter.count, f"{total:.1f}",
                   f"{size / total:.0f}", f"{first[0]:.1f}", f"{late[0]:.1f}",
                   f"{late[1]:.1f}"]  # fmt: skip
            print_row(row)
            rows.append(row)
            client.close()
    print_table(
        "Legacy reads: all of memory_sessions in batches of 500 (embedded store)", headers, rows
    )


def _seed_legacy(db, size: int, rng: random.Random) -> None:
    agents = ["support-bot", "sales-bot"]
    users = [f"u-{i}" for i in range(max(1, size // 100))]
    shard_ids = {(a, s): _oid(rng, START) for a in agents for s in ("feedback", "bugs")}
    items: list[dict] = []
    unabsorbed: dict[tuple[str, str], list] = {}
    for at in _item_times(rng, size):
        agent, user = rng.choice(agents), rng.choice(users)
        kind = rng.choices(["directive", "suggestion", "fact", "episode"], [5, 2, 2, 1])[0]
        doc = {
            "_id": _oid(rng, at), "agent_id": agent,
            "source_session_id": f"s-{rng.randrange(10**6)}", "memory_type": kind,
            "content": f"{kind} about {user}: prefers tea at {at:%H:%M}",
            "source_message_ids": [f"m-{rng.randrange(10**9)}"], "related_users": [user],
            "shard_id": shard_ids[(agent, rng.choice(["feedback", "bugs"]))]
            if kind in ("suggestion", "fact") else None,
            "agent_owner": "owner", "created_at": at.replace(tzinfo=None),
        }  # fmt: skip
        items.append(doc)
        if kind == "directive" and rng.random() < 0.2:
            unabsorbed.setdefault((agent, user), []).append(doc["_id"])
    db["memory_sessions"].insert_many(items, ordered=False)
    db["memory_user"].insert_many(
        [
            {
                "_id": _oid(rng, START),
                "agent_id": a,
                "user_id": u,
                "content": f"{u} likes tea.",
                "unabsorbed_memory_ids": unabsorbed.get((a, u), []),
                "fully_formed_memory": True,
            }
            for a in agents
            for u in users
        ]  # fmt: skip
    )
    db["memory_agent"].insert_many(
        [
            {
                "_id": oid,
                "agent_id": a,
                "shard_name": s,
                "extraction_prompt": f"{s} only",
                "is_active": True,
                "content": f"What users said about {s}.",
                "unabsorbed_memory_ids": [],
                "facts": [],
            }
            for (a, s), oid in shard_ids.items()
        ]  # fmt: skip
    )


def run_migration(sizes: list[int]) -> None:
    headers = ["legacy items", "legacy users", "first run s", "items/s", "round trips",
               "rerun s", "rerun round trips", "balanced"]  # fmt: skip
    rows: list[list[object]] = []
    for size in sizes:
        rng = random.Random(size)
        with embedded_server() as server:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            _seed_legacy(client["legacy"], size, rng)
            store = MemoryStore(client, "memory")
            store.ensure_indexes()
            counter.reset()
            began = time.perf_counter()
            report = legacy_migrate(store=store, source_db="legacy")
            first = time.perf_counter() - began
            trips = counter.count
            counter.reset()
            began = time.perf_counter()
            again = legacy_migrate(store=store, source_db="legacy")
            rerun = time.perf_counter() - began
            assert again.written == 0
            row = [size, report.collections["memory_user"].read, f"{first:.1f}",
                   f"{size / first:.0f}", trips, f"{rerun:.1f}", counter.count,
                   report.balanced and again.balanced]  # fmt: skip
            print_row(row)
            rows.append(row)
            client.close()
    print_table("Legacy migration: a full run, then a rerun (embedded store)", headers, rows)
