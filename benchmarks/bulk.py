"""Bulk delete by filter: 10,000 observations of one session in a scope of 100,000.

The scope holds `size` observations, all consolidated; every tenth came from the session
the filter names (`size / 10` match). One version absorbed the first 1,000 and every one
of that session (the 10,000 deleted are all in its history), so the job ends with one
rebuild that redacts it and refolds the 900 that stay. Rows: the dry
run (count and sample), the real request (the same match, the frozen list into the job
and the audit entry in one transaction), the `bulk` job (batches of MEMORY_BULK_BATCH,
each one transaction with the job's progress) and the one rebuild it queues (offline
provider). Wall time and store commands (round trips) of each.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter, bound_work, embedded_server, print_row, print_table
from streams.actions.base import Actor, register_dispatcher
from streams.actions.bulk import do_observations_bulk
from streams.core.documents import ConsolidationVersion, Observation, Scope, utcnow
from streams.guard.screening import screened
from streams.jobs import job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.bulk import BulkFilter
from streams.memory.bulk_job import DEFAULT_BATCH, bulk_run
from streams.memory.rebuild import rebuild_run
from streams.search.index import search_index_build
from streams.store import MemoryStore

SIZES = [100_000]
AGENT = "bench-agent"
BATCH = int(os.environ.get("BENCH_BULK_BATCH", DEFAULT_BATCH))
SEED_CHUNK = 5000
ABSORBED = 1000


Step = tuple[str, float, int, str]  # what, ms, store commands, note


def run(sizes: list[int] | None = None) -> None:
    headers = ["scope", "matched", "batch", "step", "ms", "store commands", "note"]
    rows: list[list[object]] = []
    register_dispatcher(None)  # the job runs here, measured, not in the in-process pool
    with embedded_server() as server:
        for size in sizes or SIZES:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            db_name = f"bench_bulk_{size}"
            store = MemoryStore(client, db_name)
            store.ensure_indexes()
            t0 = time.perf_counter()
            scope_id = _seed(store, size)
            print(f"seeded {size} observations in {time.perf_counter() - t0:.0f} s", flush=True)
            matched, steps = _bulk_steps(store, counter, scope_id, size)
            scope_after = store.scopes.get(ObjectId(scope_id))
            assert scope_after is not None
            print(
                f"after: rebuild list {len(scope_after.rebuild_observation_ids)}, "
                f"version {scope_after.consolidation_version}",
                flush=True,
            )
            for step, ms, commands, note in steps:
                row = [size, matched, BATCH, step, f"{ms:.0f}", commands, note]
                print_row(row)
                rows.append(row)
            # No drop_database: the server's directory goes with it (a drop of a database
            # this size hung the embedded store after the run).
            client.close()
    print_table(
        "Bulk delete by filter (one session's observations in one scope; embedded store)",
        headers,
        rows,
    )


def _bulk_steps(
    store: MemoryStore, counter: CommandCounter, scope_id: str, size: int
) -> tuple[int, list[Step]]:
    """The dry run, the request, the bulk job and its rebuild, each timed and counted;
    how many the filter matched."""
    bulk_filter = BulkFilter(scope_id=scope_id, session_id="s-bad")
    steps: list[Step] = []
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
        work=bound_work(bulk_run, store=store),
    )  # fmt: skip
    assert done is not None
    applied = done.result["applied"]
    slowest = sorted(counter.micros.items(), key=lambda kv: -kv[1])[:6]
    print("bulk job, store time by command:", slowest, flush=True)
    steps.append(("bulk job", _ms(t0), counter.count, f"{applied} deleted"))
    print_row([size, dry.matched, BATCH, *steps[-1][:1], f"{steps[-1][1]:.0f}"])
    [rebuild] = done.follow_ups
    steps.append(_rebuild_step(store, counter, rebuild.id))
    return dry.matched, steps


def _rebuild_step(store: MemoryStore, counter: CommandCounter, job_id: str) -> Step:
    """The bulk job's one rebuild, timed; a failure is measured and reported, not hidden."""
    counter.reset()
    t0 = time.perf_counter()
    try:
        rebuilt = job_execute(
            store=store, job_id=job_id, llm=OfflineProvider(),
            work=bound_work(rebuild_run, store=store),
        )  # fmt: skip
        note = f"refolded {rebuilt.result.get('absorbed')}" if rebuilt else ""
    except Exception as exc:
        note = f"failed: {type(exc).__name__}"
    slowest = sorted(counter.micros.items(), key=lambda kv: -kv[1])[:6]
    print("rebuild, store time by command:", slowest, flush=True)
    return ("its one rebuild", _ms(t0), counter.count, note)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def _seed(store: MemoryStore, size: int) -> str:
    """`size` observations in one group scope (written straight through the converters, as
    `benchmarks.seed` does: the services would take most of an hour at 100,000), every
    tenth from session `s-bad`, all consolidated; one version absorbed the first
    `ABSORBED` and every one of `s-bad` (so the rebuild removes 10,000 from its history
    and refolds the others)."""
    now = utcnow()
    store.agents.ensure(AGENT, now=now)
    scope = Scope(
        agent_id=AGENT,
        scope_type="group",
        group_id="bench-group",
        display_name="Bench group",
        seq=1,
        observation_seq=size,
        observation_count=size,
        created_at=now,
        last_activity_at=now,
    )
    store.seeding.insert_one("scopes", scope.to_mongo())
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
            consolidated=True,
            seq=i + 1,
        )
        for i in range(size)
    ]
    for start in range(0, size, SEED_CHUNK):
        chunk = observations[start : start + SEED_CHUNK]
        store.seeding.insert_many("observations", [o.to_mongo() for o in chunk], ordered=False)
    search_index_build(store=store, observations=observations)
    version = ConsolidationVersion(
        scope_id=scope.id,
        agent_id=AGENT,
        version=1,
        text=screened("The team deploys on Friday and meets at nine."),
        trigger="threshold",
        absorbed_observation_ids=[
            o.id
            for i, o in enumerate(observations)
            if i < ABSORBED or o.source_session_id == "s-bad"
        ],
    )
    store.consolidations.insert(version)
    store.scopes.update_fields(
        ObjectId(scope.id),
        {"consolidation": version.text, "consolidation_version": 1},
    )
    store.agents.set_counters(AGENT, scopes=1, observations=size, pending=0)
    store.seeding.update_one("agents", {"_id": AGENT}, {"$set": {"scope_seq": 1}})
    return scope.id
