"""What the embedded store alone costs a single add: `python -m benchmarks store_floor`.

A single add through gunicorn takes ~21 ms at p50 on a quiet 2-core machine; issue 32
asks for 10. This measures the floor under it, with no HTTP and no Django: the same
embedded store as production (SecantusDB started by `start_server`: journaled commits,
the same flags), the declared indexes, one client in this process, sequential calls.

- `journaled txn, 1 insert, no index`: the least a durable write costs here (a
  transaction with one `insert` into a collection with only `_id`, and its commit).
- `journaled txn, 1 insert, observations' indexes`: the same into `memory_observations`
  with its declared indexes.
- `journaled txn, the add's 6 writes (bulkWrite)`: the add's writes as one client
  `bulkWrite` in one transaction (claim, observation, search postings, audit entry, two
  counters): what an add would cost with no read at all.
- `the scope read`, `scope read + the window read`: the add's two reads (the API reads
  the scope for the caller's visibility; the add reads the 50 newest observations for
  the contradiction and near-duplicate checks).
- `observation_add (domain, no HTTP)`: the add itself as the API's action runs it
  (scope read by the caller, the window read, the `bulkWrite`, the commit).

Each row: p50, p95, mean, the store process's CPU per call (utime+stime of the server
process, load-independent), and its commands per call. BENCH_FLOOR_CALLS sets the calls
per row (default 300); rows run interleaved in turns of 25, so they meet the same load.

A second table counts the index entries one add writes, per collection
(`benchmarks/index_entries.py`): what the store maintains beyond the documents.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bson import ObjectId
from pymongo import InsertOne, MongoClient, UpdateOne, monitoring

from benchmarks.harness import percentile, print_table
from benchmarks.single_add import _cpu_seconds

CALLS = int(os.environ.get("BENCH_FLOOR_CALLS", "300"))
TURN = 25


class CommandCount(monitoring.CommandListener):
    def __init__(self) -> None:
        self.count = 0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.count += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def run() -> None:
    from memory_admin.runtime.embedded_store import start_server, stop_server
    from streams.actions.base import Actor
    from streams.memory.scopes import ScopeKey, scope_get_or_create
    from streams.store import MemoryStore

    root = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    server = start_server(
        storage_path=root / "data", log_path=root / "server.log", start_timeout=60, detached=False
    )
    counter = CommandCount()
    client: MongoClient[dict[str, Any]] = MongoClient(server.uri, event_listeners=[counter])
    try:
        store = MemoryStore(client, "floor")
        store.ensure_indexes()
        database = client["floor"]
        # No consolidation: the floor is the add's own work (the pending list is emptied
        # between turns, outside the timing, so the scope document stays the size it
        # has under threshold consolidation).
        scope, _ = scope_get_or_create(
            store=store,
            key=ScopeKey(agent_id="bench", scope_type="group", group_id="g"),
            defaults={"consolidation_threshold": 10**6},
        )
        calls = _calls(client, database, store, scope, Actor)
        for call in calls.values():  # warm: the first call of each opens its tables
            for _ in range(3):
                call()
        timings: dict[str, list[float]] = {name: [] for name in calls}
        cpu: dict[str, float] = dict.fromkeys(calls, 0.0)
        commands: dict[str, int] = dict.fromkeys(calls, 0)
        while min(len(v) for v in timings.values()) < CALLS:
            for name, call in calls.items():
                cpu_before, count_before = _cpu_seconds(server.pid), counter.count
                for _ in range(TURN):
                    t0 = time.perf_counter()
                    call()
                    timings[name].append(time.perf_counter() - t0)
                cpu[name] += _cpu_seconds(server.pid) - cpu_before
                commands[name] += counter.count - count_before
                database["memory_scopes"].update_one(
                    {"_id": ObjectId(scope.id)}, {"$set": {"pending_observation_ids": []}}
                )
        print_table(
            f"The embedded store's floor under one add (load {os.getloadavg()[0]:.1f})",
            ["call", "calls", "p50 ms", "p95 ms", "mean ms", "store CPU ms/call", "cmds/call"],
            _rows(timings, cpu, commands),
        )
        _print_entries(client)
    finally:
        client.close()
        stop_server(server)


def _rows(
    timings: dict[str, list[float]], cpu: dict[str, float], commands: dict[str, int]
) -> list[list[object]]:
    rows: list[list[object]] = []
    for name, seconds in timings.items():
        ms = [s * 1000 for s in seconds]
        rows.append(
            [
                name,
                len(ms),
                f"{percentile(ms, 50):.1f}",
                f"{percentile(ms, 95):.1f}",
                f"{statistics.fmean(ms):.1f}",
                f"{1000 * cpu[name] / len(ms):.1f}",
                f"{commands[name] / len(ms):.1f}",
            ]
        )
    return rows


def _print_entries(client: MongoClient) -> None:
    from benchmarks.index_entries import count_one_add
    from streams.store import DECLARED_INDEXES, MemoryStore

    print_table(
        "What one add writes in its transaction (the search fold behind not counted)",
        ["collection", "inserted", "changed", "removed", "index entries"],
        count_one_add(client, MemoryStore, DECLARED_INDEXES),
    )


def _calls(
    client: MongoClient, database: Any, store: Any, scope: Any, actor_type: Any
) -> dict[str, Callable[[], None]]:
    from streams.actions.observations import do_observation_add
    from streams.memory.window import SIMILAR_WINDOW

    plain = database["floor_plain"]
    observations = database["memory_observations"]
    n = iter(range(10**9))

    def one_insert(collection: Any) -> Callable[[], None]:
        def call() -> None:
            with client.start_session() as session, session.start_transaction():
                collection.insert_one({"scope_id": ObjectId(), "seq": next(n)}, session=session)

        return call

    def six_writes() -> None:
        i = next(n)
        now = datetime.now(UTC)
        with client.start_session() as session, session.start_transaction():
            client.bulk_write(
                [
                    UpdateOne(
                        {"_id": "claim"},
                        {"$inc": {"seq": 1}, "$set": {"at": now}},
                        upsert=True,
                        namespace="floor.floor_claims",
                    ),
                    InsertOne(
                        {"scope_id": ObjectId(), "seq": i, "content": f"fact {i}", "at": now},
                        namespace="floor.memory_observations",
                    ),
                    InsertOne(
                        {"_id": f"p{i}", "k": [f"t{i}"], "f": True},
                        namespace="floor.memory_search_terms",
                    ),
                    InsertOne(
                        {"action": "observation.create", "actor": "bench", "at": now},
                        namespace="floor.memory_audit",
                    ),
                    UpdateOne(
                        {"_id": "bench"},
                        {"$inc": {"adds": 1}},
                        upsert=True,
                        namespace="floor.floor_agents",
                    ),
                    UpdateOne(
                        {"agent_id": "bench", "day": "2026-11-27"},
                        {"$inc": {"adds": 1}},
                        upsert=True,
                        namespace="floor.memory_agent_days",
                    ),
                ],
                session=session,
            )

    scope_id = ObjectId(scope.id)

    def scope_read() -> None:
        store.scopes.get(scope_id)

    def window_read() -> None:
        top = store.scopes.get(scope_id).observation_seq
        store.observations.live_texts_between(
            scope_id, low_seq=max(0, top - SIMILAR_WINDOW), high_seq=top
        )

    def domain_add() -> None:
        do_observation_add(
            store=store,
            actor=actor_type.api("bench"),
            scope=store.scopes.get(ObjectId(scope.id)),
            content=f"Caroline said on day {next(n)} that she enjoys painting landscapes",
        )

    return {
        "journaled txn, 1 insert, no index": one_insert(plain),
        "journaled txn, 1 insert, observations' indexes": one_insert(observations),
        "journaled txn, the add's 6 writes (bulkWrite)": six_writes,
        "the scope read (find by _id)": scope_read,
        "scope read + the window read (50 newest)": window_read,
        "observation_add (domain, no HTTP)": domain_add,
    }
