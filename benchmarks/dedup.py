"""What "the same fact once per scope" costs an add: `python -m benchmarks dedup [--sizes N,..]`.

For each size N, one scope is seeded with N live observations (each with its `text_key`,
as every write now stores), then `ADDS` new facts are added one at a time through
`observation_add` (the single-add path of the API, in this process), and as many repeats
of facts the scope holds. Measured per add: wall time p50/p95, store commands, and the
reads the rule uses inside the add's transaction, timed on their own: the exact check
(one `find` by the unique `text_key` index) and the window of the scope's 50 newest
observations (by the `(scope_id, seq)` index), which the near-duplicate check shares with
the contradiction check (one read per add serves both). "dedup reads/add" counts the
round trips the rule adds: the exact checks, and any window read beyond the one the
contradiction check needs anyway.
"""

from __future__ import annotations

import random
import time
from typing import Any

from bson import ObjectId
from pymongo import MongoClient, monitoring

from benchmarks.harness import CommandCounter, embedded_server, print_row, print_table, summary_ms
from benchmarks.seed import WORDS
from streams.core.documents import Observation, Scope, utcnow
from streams.memory.observations import observation_add
from streams.memory.window import SIMILAR_WINDOW
from streams.search.dedup import text_key
from streams.store import MemoryStore

SIZES = [1_000, 10_000]
ADDS = 150
AGENT = "bench-dedup"
SEED_BATCH = 1_000
EXACT = "find memory_observations (exact check)"
WINDOW = "find memory_observations (newest window)"


def fact(rng: random.Random, n: int) -> str:
    return f"{' '.join(rng.choice(WORDS) for _ in range(10))} fact{n}."


def _seed(store: MemoryStore, size: int, rng: random.Random) -> Scope:
    now = utcnow()
    store.agents.ensure(AGENT, now=now)
    scope = Scope(
        agent_id=AGENT,
        scope_type="group",
        group_id=f"g-{size}",
        display_name=f"Group {size}",
        observation_seq=size,
        observation_count=size,
        created_at=now,
        last_activity_at=now,
    )
    store.seeding.insert_one("scopes", scope.to_mongo())
    for start in range(0, size, SEED_BATCH):
        batch = []
        for seq in range(start + 1, min(size, start + SEED_BATCH) + 1):
            content = fact(rng, seq)
            batch.append(
                Observation(
                    scope_id=scope.id,
                    agent_id=AGENT,
                    content=content,
                    consolidated=True,
                    seq=seq,
                    text_key=text_key(scope.id, content),
                ).to_mongo()
            )
        store.seeding.insert_many("observations", batch, ordered=False)
    return scope


HEADERS = [
    "scope size",
    "adds",
    "add p50 ms",
    "add p95 ms",
    "commands/add",
    "finds (all)/add",
    "exact check p50 ms",
    "exact check / add",
    "window read p50 ms",
    "window / add",
    "window reads/add",
    "dedup reads/add",
    "repeat add p50 ms",
]


def run(sizes: list[int] | None = None) -> None:
    rows: list[list[object]] = []
    breakdown: list[list[object]] = []
    with embedded_server() as server:
        for size in sizes or SIZES:
            counter = TargetCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            store = MemoryStore(client, f"bench_dedup_{size}")
            store.ensure_indexes()
            rng = random.Random(size)
            scope = _seed(store, size, rng)
            counter.reset()
            adds = _new_adds(store, scope, rng, size)
            per_add = _per_add(counter)  # the new adds' commands, before anything else runs
            breakdown += _by_command(counter, size)
            repeats = _repeated_adds(store, scope, size)
            exact, near = _dedup_reads(store, scope, rng, size)
            row = _row(size, per_add, adds, exact, near, repeats)
            print_row(row)
            rows.append(row)
            client.close()  # each size has its own database; the server's directory goes after
    print_table("Dedup cost per single add (one scope of N live observations)", HEADERS, rows)
    print_table(
        "One single add by store command (handler's scope read included)",
        ["scope size", "command", "calls/add", "ms/add"],
        breakdown,
    )


def _new_adds(store: MemoryStore, scope: Scope, rng: random.Random, size: int) -> list[float]:
    """ADDS single adds of new facts, each timed (the handler's scope read is not)."""
    oid = ObjectId(scope.id)
    adds: list[float] = []
    for n in range(ADDS):
        current = store.scopes.get(oid)  # as the API handler reads it
        assert current is not None
        started = time.perf_counter()
        observation_add(
            store=store, scope=current, content=fact(rng, size + n + 1), actor="api:bench"
        )
        adds.append(time.perf_counter() - started)
    return adds


def _by_command(counter: TargetCounter, size: int) -> list[list[object]]:
    """The adds' store commands, most time first: calls and ms per add."""
    return [
        [
            f"{size:,}",
            name,
            f"{counter.calls_by_target.get(name, 0) / ADDS:.2f}",
            f"{micros / 1000 / ADDS:.2f}",
        ]
        for name, micros in sorted(counter.micros.items(), key=lambda kv: -kv[1])
    ]


def _repeated_adds(store: MemoryStore, scope: Scope, size: int) -> list[float]:
    """Adds of seeded texts again (upper-cased): each is found a duplicate, timed."""
    oid = ObjectId(scope.id)
    repeats: list[float] = []
    for observation in store.observations.seq_window(oid, low_seq=0, high_seq=min(size, ADDS)):
        current = store.scopes.get(oid)
        assert current is not None
        started = time.perf_counter()
        kept = observation_add(store=store, scope=current, content=observation.content.upper())
        repeats.append(time.perf_counter() - started)
        assert kept.duplicate and kept.id == observation.id
    return repeats


def _dedup_reads(
    store: MemoryStore, scope: Scope, rng: random.Random, size: int
) -> tuple[list[float], list[float]]:
    """The two reads of the dedup check alone, timed: the exact text key, the near window."""
    oid = ObjectId(scope.id)
    exact: list[float] = []
    near: list[float] = []
    for n in range(ADDS):
        key = text_key(scope.id, fact(rng, 10 * size + n))
        started = time.perf_counter()
        store.observations.live_by_text_key([key])
        exact.append(time.perf_counter() - started)
        top = size + ADDS
        started = time.perf_counter()
        store.observations.live_texts_between(oid, low_seq=top - SIMILAR_WINDOW, high_seq=top)
        near.append(time.perf_counter() - started)
    return exact, near


def _per_add(counter: TargetCounter) -> tuple[float, float, float, float]:
    """Store commands, window reads, exact-key reads and finds per add."""
    return (
        (counter.count - ADDS) / ADDS,  # less the handler's own scope read
        counter.calls_by_target.get(WINDOW, 0) / ADDS,
        counter.calls_by_target.get(EXACT, 0) / ADDS,
        counter.by_name.get("find", 0) / ADDS,
    )


def _row(
    size: int,
    per_add: tuple[float, float, float, float],
    adds: list[float],
    exact: list[float],
    near: list[float],
    repeats: list[float],
) -> list[object]:
    commands, windows, exact_calls, finds = per_add
    add_p50, add_p95, _ = summary_ms(adds)
    exact_p50 = summary_ms(exact)[0]
    near_p50 = summary_ms(near)[0]
    return [
        f"{size:,}",
        ADDS,
        f"{add_p50:.2f}",
        f"{add_p95:.2f}",
        f"{commands:.1f}",
        f"{finds:.1f}",
        f"{exact_p50:.2f}",
        f"{exact_p50 / add_p50:.0%}",
        f"{near_p50:.2f}",
        f"{near_p50 / add_p50:.0%}",
        f"{windows:.2f}",
        f"{exact_calls + max(0.0, windows - 1.0):.2f}",
        f"{summary_ms(repeats)[0]:.2f}",
    ]


class TargetCounter(CommandCounter):
    """Also counts calls per "command collection" (the harness times them per target)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls_by_target: dict[str, int] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        target = f"{event.command_name} {event.command.get(event.command_name)}"
        query = event.command.get("filter") or {}
        if event.command_name == "find" and "text_key" in query:
            target = EXACT
        elif event.command_name == "find" and "seq" in query and "scope_id" in query:
            target = WINDOW
        with self._lock:
            self.count += 1
            self.by_name[event.command_name] = self.by_name.get(event.command_name, 0) + 1
            self._names[event.request_id] = target
            self.calls_by_target[target] = self.calls_by_target.get(target, 0) + 1

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.calls_by_target = {}


if __name__ == "__main__":
    run()
