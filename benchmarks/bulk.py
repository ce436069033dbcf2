"""Bulk delete by filter: 10,000 observations of one session in a scope of 100,000.

The scope holds `size` observations; every tenth came from the session the filter names
(`size / 10` match). The first 1,000 were absorbed by a consolidation version (100 of
them match), so the job ends with one rebuild. Rows: the dry run (count and sample), the
real request (the same match, the frozen list into the job and the audit entry in one
transaction), the `bulk` job (batches of MEMORY_BULK_BATCH, each one transaction with
the job's progress) and the one rebuild it queues (offline provider). Wall time and store
commands (round trips) of each.
"""

from __future__ import annotations

import os
import time

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter, embedded_server, print_row, print_table
from streams.actions.base import Actor, register_dispatcher
from streams.actions.bulk import do_observations_bulk
from streams.bulk import DEFAULT_BATCH, BulkFilter, bulk_run
from streams.consolidation import consolidation_commit
from streams.documents import Observation, utcnow
from streams.jobs import job_execute
from streams.llm.offline import OfflineProvider
from streams.observations import append_in_transaction
from streams.rebuild import rebuild_run
from streams.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore

SIZES = [100_000]
AGENT = "bench-agent"
BATCH = int(os.environ.get("BENCH_BULK_BATCH", DEFAULT_BATCH))
SEED_CHUNK = 1000
ABSORBED = 1000


def run(sizes: list[int] | None = None) -> None:
    headers = ["scope", "matched", "batch", "step", "ms", "store commands", "note"]
    rows: list[list[object]] = []
    register_dispatcher(None)  # the job runs here, measured, not in the in-process pool
    with embedded_server() as server:
        for size in sizes or SIZES:
            counter = CommandCounter()
            client = MongoClient(server.uri, tz_aware=True, event_listeners=[counter])
            db_name = f"bench_bulk_{size}"
            store = MemoryStore(client, db_name)
            store.ensure_indexes()
            t0 = time.perf_counter()
            scope_id = _seed(store, size)
            print(f"seeded {size} observations in {time.perf_counter() - t0:.0f} s", flush=True)
            bulk_filter = BulkFilter(scope_id=scope_id, session_id="s-bad")
            steps: list[tuple[str, float, int, str]] = []

            counter.reset()
            t0 = time.perf_counter()
            dry = do_observations_bulk(
                store=store, actor=Actor.cli(), agent_id=AGENT, bulk_filter=bulk_filter,
                action="delete", dry_run=True,
            )  # fmt: skip
            steps.append(("dry run", _ms(t0), counter.count, f"{len(dry.sample)} in the sample"))

            counter.reset()
            t0 = time.perf_counter()
            real = do_observations_bulk(
                store=store, actor=Actor.cli(), agent_id=AGENT, bulk_filter=bulk_filter,
                action="delete", dry_run=False, batch_size=BATCH,
            )  # fmt: skip
            steps.append(("request (match, job, audit)", _ms(t0), counter.count, ""))
            assert real.job is not None

            counter.reset()
            t0 = time.perf_counter()
            done = job_execute(
                store=store, job_id=real.job.id, llm=OfflineProvider(),
                work=lambda r, store=store: bulk_run(store=store, run=r),
            )  # fmt: skip
            assert done is not None
            applied = done.result["applied"]
            slowest = sorted(counter.micros.items(), key=lambda kv: -kv[1])[:6]
            print("bulk job, store time by command:", slowest, flush=True)
            steps.append(("bulk job", _ms(t0), counter.count, f"{applied} deleted"))

            [rebuild] = done.follow_ups
            counter.reset()
            t0 = time.perf_counter()
            rebuilt = job_execute(
                store=store, job_id=rebuild.id, llm=OfflineProvider(),
                work=lambda r, store=store: rebuild_run(store=store, run=r),
            )  # fmt: skip
            assert rebuilt is not None
            steps.append(
                (
                    "its one rebuild",
                    _ms(t0),
                    counter.count,
                    f"refolded {rebuilt.result.get('absorbed')}",
                )
            )
            left = scope_get(store=store, scope_id=scope_id)
            assert not left.needs_rebuild
            for step, ms, commands, note in steps:
                row = [size, dry.matched, BATCH, step, f"{ms:.0f}", commands, note]
                print_row(row)
                rows.append(row)
            client.drop_database(db_name)
            client.close()
    print_table(
        "Bulk delete by filter (one session's observations in one scope; embedded store)",
        headers,
        rows,
    )


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def _seed(store: MemoryStore, size: int) -> str:
    """`size` observations in one group scope, every tenth from session `s-bad`; the first
    `ABSORBED` consolidated by one version."""
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "bench-group"))
    first: list[str] = []
    for start in range(0, size, SEED_CHUNK):
        now = utcnow()
        observations = [
            Observation(
                scope_id=scope.id,
                agent_id=AGENT,
                content=f"Team note {i}: deploys on Friday, standup at nine, room {i % 97}.",
                source_session_id="s-bad" if i % 10 == 0 else f"s-{i // 50}",
                source_message_ids=[str(ObjectId())],
                related_user_ids=[f"user-{i % 50}"],
                observed_at=now,
                created_at=now,
            )
            for i in range(start, min(start + SEED_CHUNK, size))
        ]
        append_in_transaction(store=store, scope_id=scope.id, observations=observations, now=now)
        if len(first) < ABSORBED:
            first += [o.id for o in observations][: ABSORBED - len(first)]
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        expected_version=0,
        text="The team deploys on Friday and meets at nine.",
        absorbed_ids=first,
        trigger="threshold",
        actor=None,
    )
    return scope.id
