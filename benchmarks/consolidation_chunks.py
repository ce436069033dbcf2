"""`python -m benchmarks consolidation_chunks [--sizes 100,1000,5000]`: the chunked
consolidation's cost table (issue 42 item 3).

For each pending count a fresh individual scope gets that many observations through the
store (`observation_batch_add`, 500 a transaction: screening, postings, pending list),
then one consolidation job folds them with the offline provider at the default chunk
budget (`MEMORY_CONSOLIDATION_CHUNK_TOKENS`, 6000). The table says the estimate shown
before "Consolidate now" (chunks, prompt tokens) beside what the run did (chunks, LLM
calls, prompt and completion tokens counted by the provider), the run's wall time and
the part of it the provider's calls took (the rest is the store: reads and the commit).
The fidelity floor is off: a 500-word memory cannot state 5,000 distinct facts, and the
floor is not what this measures.
"""

from __future__ import annotations

import time
from typing import Any

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_row, print_table
from streams.core.documents import Scope, utcnow
from streams.jobs import job_create, job_execute
from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.memory.consolidation_chunks import DEFAULT_CHUNK_TOKENS
from streams.memory.consolidation_estimate import consolidation_estimate
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observation_batch import MAX_BATCH, BatchItem, observation_batch_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore

SIZES = [100, 1000, 5000]
SUBJECTS = ("Ada", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivo", "Jun")
THINGS = ("tea", "bike", "desk", "train", "garden", "laptop", "guitar", "kettle", "boat")
SEED_THRESHOLD = 1_000_000  # no threshold job while seeding: the run is started by hand


def pending_fact(n: int) -> str:
    """The n-th seeded observation: distinct text (a scope holds a text once)."""
    subject, thing = SUBJECTS[n % len(SUBJECTS)], THINGS[(n // len(SUBJECTS)) % len(THINGS)]
    return f"{subject} noted item {n} about the {thing} on day {n % 28 + 1}."


def pending_seed(*, store: MemoryStore, scope: Scope, count: int, start: int = 0) -> None:
    """`count` pending observations in `scope`, through the store, `MAX_BATCH` a batch."""
    for low in range(start, start + count, MAX_BATCH):
        high = min(low + MAX_BATCH, start + count)
        items = [
            BatchItem(content=pending_fact(n), client_id=f"seed-{n}") for n in range(low, high)
        ]
        current = store.scopes.get(ObjectId(scope.id)) or scope
        observation_batch_add(store=store, scope=current, items=items)


def seeded_scope(store: MemoryStore, *, user_id: str, count: int) -> Scope:
    store.agents.ensure("bench-agent", now=utcnow())
    scope, _ = scope_get_or_create(
        store=store,
        key=ScopeKey(agent_id="bench-agent", scope_type="individual", user_id=user_id),
        defaults={"consolidation_threshold": SEED_THRESHOLD},
    )
    pending_seed(store=store, scope=scope, count=count)
    found = store.scopes.get(ObjectId(scope.id))
    assert found is not None
    return found


def measure(
    store: MemoryStore, count: int, *, chunk_tokens: int = DEFAULT_CHUNK_TOKENS
) -> list[Any]:
    """One row of the table: a scope of `count` pending observations, estimated and run."""
    scope = seeded_scope(store, user_id=f"u-{count}", count=count)
    estimate = consolidation_estimate(
        store=store, scope=scope, chunk_tokens=chunk_tokens, model=OFFLINE_MODEL, prices={}
    )
    job = job_create(store=store, kind="consolidation", agent_id=scope.agent_id, scope_id=scope.id)
    started = time.perf_counter()
    run = job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda run: consolidation_run(
            store=store, run=run, fidelity_floor=0.0, chunk_tokens=chunk_tokens
        ),
    )
    seconds = time.perf_counter() - started
    assert run is not None
    result = run.result
    after = store.scopes.get(ObjectId(scope.id))
    assert after is not None and not after.pending_observation_ids
    version = store.consolidations.get(ObjectId(scope.id), after.consolidation_version)
    assert version is not None
    return [
        count,
        estimate.chunks,
        estimate.prompt_tokens,
        result["chunks"],
        run.llm.calls,
        result["prompt_tokens"],
        result["completion_tokens"],
        result["absorbed"],
        f"{seconds:.2f}",
        f"{version.duration_ms / 1000:.2f}",
    ]


def run(sizes: list[int] | None = None) -> None:
    rows = []
    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        store = MemoryStore(client, "bench_consolidation_chunks")
        store.ensure_indexes()
        for count in sizes or SIZES:
            rows.append(measure(store, count))
            print_row(rows[-1])
        client.close()
    print_table(
        f"Consolidation in chunks, offline provider, {DEFAULT_CHUNK_TOKENS} prompt tokens a call",
        [
            "pending",
            "est. chunks",
            "est. prompt tokens",
            "chunks",
            "LLM calls",
            "prompt tokens",
            "completion tokens",
            "absorbed",
            "seconds",
            "of which LLM",
        ],
        rows,
    )
