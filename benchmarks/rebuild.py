"""Rebuild cost: a scope whose 20 versions absorbed N observations (1,000 by default).

One absorbed observation is deleted, edited or made private; the row measures the
request (the domain action: soft delete or update, copy removal, the flag, the job)
and the rebuild job it queues (one consolidation call with the offline provider:
the last clean version plus everything later versions absorbed, and the redaction
of the versions that held the old text). Deleting what v1 absorbed is the worst
case (the whole history is refolded); what v20 absorbed, the best.
"""

from __future__ import annotations

import time
from typing import Any

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter, bound_work, embedded_server, print_row, print_table
from streams.core.documents import Job, Observation, utcnow
from streams.jobs import job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.consolidation import consolidation_commit
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import append_in_transaction
from streams.memory.rebuild import rebuild_run
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore

SIZES = [1000]
VERSIONS = 20
AGENT = "bench-agent"
CASES = [("delete", 1), ("delete", 10), ("delete", 20), ("edit", 10), ("private", 10)]


HEADERS = [
    "absorbed",
    "versions",
    "action",
    "in version",
    "action ms",
    "action trips",
    "rebuild ms",
    "rebuild trips",
    "LLM calls",
    "refolded",
    "redacted",
]


def run(sizes: list[int] | None = None) -> None:
    rows: list[list[object]] = []
    with embedded_server() as server:
        for size in sizes or SIZES:
            for number, (action, version) in enumerate(CASES):
                counter = CommandCounter()
                client: MongoClient[dict[str, Any]] = MongoClient(
                    server.uri, tz_aware=True, event_listeners=[counter]
                )
                store = MemoryStore(client, f"bench_rebuild_{size}_{number}")
                by_version = _seed(store, size)
                target = store.observations.get(ObjectId(by_version[version][0]))
                assert target is not None
                counter.reset()
                t0 = time.perf_counter()
                job = _change(store, target, action)
                action_ms = (time.perf_counter() - t0) * 1000
                action_trips = counter.count
                counter.reset()
                t0 = time.perf_counter()
                done = job_execute(
                    store=store,
                    job_id=job.id,
                    llm=OfflineProvider(),
                    work=bound_work(rebuild_run, store=store),
                )
                rebuild_ms = (time.perf_counter() - t0) * 1000
                assert done is not None
                row = [
                    size,
                    VERSIONS,
                    action,
                    f"v{version}",
                    f"{action_ms:.0f}",
                    action_trips,
                    f"{rebuild_ms:.0f}",
                    counter.count,
                    done.llm.calls,
                    done.result["absorbed"],
                    done.result["redacted"],
                ]
                print_row(row)
                rows.append(row)
                client.drop_database(f"bench_rebuild_{size}_{number}")
                client.close()
    print_table(
        "Rebuild after a source changed (offline provider; action = the request, "
        "rebuild = its job)",
        HEADERS,
        rows,
    )


def _change(store: MemoryStore, target: Observation, action: str) -> Job:
    """Delete, edit or make private the absorbed observation; the rebuild job it makes."""
    jobs: list[Job] = []
    if action == "delete":
        observation_delete(store=store, observation=target, follow_ups=jobs)
    elif action == "edit":
        observation_update(
            store=store, observation=target, content="A corrected note.", follow_ups=jobs
        )
    else:
        observation_update(store=store, observation=target, private=True, follow_ups=jobs)
    [job] = jobs
    return job


def _seed(store: MemoryStore, size: int) -> dict[int, list[str]]:
    """`size` observations absorbed by `VERSIONS` versions, evenly; their ids by version."""
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "bench-group"))
    per_version = max(1, size // VERSIONS)
    by_version: dict[int, list[str]] = {}
    for version in range(1, VERSIONS + 1):
        now = utcnow()
        observations = [
            Observation(
                scope_id=group.id,
                agent_id=AGENT,
                content=f"Team note {version}-{i}: deploys on Friday, standup at nine.",
                related_user_ids=[f"user-{i % 50}"],
            )
            for i in range(per_version)
        ]
        append_in_transaction(store=store, scope_id=group.id, observations=observations, now=now)
        scope = scope_get(store=store, scope_id=group.id)
        consolidation_commit(
            store=store,
            scope=scope,
            expected_version=scope.consolidation_version,
            text=f"The team deploys on Friday and meets at nine (version {version}).",
            absorbed_ids=[o.id for o in observations],
            trigger="threshold",
            actor=None,
        )
        by_version[version] = [o.id for o in observations]
    return by_version
