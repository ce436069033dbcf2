"""Store round trips per formation, from 1K to 1M stored observations.

Each row seeds a fresh database, then forms sessions of 45 messages (the
message trigger) with the offline provider, counting every command sent to the
store for the ingest that triggers the formation and for the formation itself.
The counts must not grow with the data.
"""

from __future__ import annotations

import statistics
import time
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
from streams.jobs import job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.formation import (
    FormationSettings,
    IncomingMessage,
    formation_run,
    messages_ingest,
)
from streams.store import MemoryStore

SIZES = [1_000, 10_000, 100_000, 1_000_000]
SESSIONS = 5
AGENT = "bench-agent"
TALK = [
    "I prefer short answers with examples.",
    "Our team deploys to Kubernetes every Friday.",
    "Please always answer in English.",
    "Actually, I moved to Lisbon last month.",
    "Everyone wants a dark mode in the desktop app.",
]


def run(sizes: list[int] | None = None) -> None:
    rows = []
    settings = FormationSettings()
    with embedded_server() as server:
        for size in sizes or SIZES:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            store = MemoryStore(client, f"bench_formation_{size}")
            seeded = seed(
                store, agent_id=AGENT, scopes=max(10, min(size // 10, 100_000)), observations=size
            )
            ingest_trips, formation_trips, seconds = [], [], []
            for n in range(SESSIONS):
                ingested, formed, spent = _one_session(store, counter, settings, n)
                ingest_trips.append(ingested)
                formation_trips.append(formed)
                seconds.append(spent)
            slowest = sorted(counter.micros.items(), key=lambda kv: -kv[1])[:3]
            p50, p95, _ = summary_ms(seconds)
            print(f"{size}: slowest commands in the last formation (us): {slowest}")
            rows.append(
                [
                    f"{size:,}",
                    f"{seeded:.0f}",
                    statistics.median(ingest_trips),
                    f"{min(formation_trips)}-{max(formation_trips)}",
                    f"{p50:.1f}",
                    f"{p95:.1f}",
                ]
            )
            print_row(rows[-1])
            client.close()
    print_table(
        "Store round trips per formation (45 messages, offline provider, embedded store)",
        [
            "observations stored",
            "seed s",
            "ingest trips",
            "formation trips",
            "formation p50 ms",
            "formation p95 ms",
        ],
        rows,
    )


def _one_session(
    store: MemoryStore, counter: CommandCounter, settings: FormationSettings, n: int
) -> tuple[int, int, float]:
    """Ingest a full session and run its formation: the ingest's and the formation's
    round trips, and the formation's seconds."""
    messages = [
        IncomingMessage(
            id=f"m{i}",
            role="user" if i % 2 == 0 else "assistant",
            content=TALK[i % len(TALK)],
        )
        for i in range(settings.max_messages)
    ]
    counter.reset()
    result = messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id=f"s{n}",
        user_id=f"bench-user-{n}",
        user_name=f"User {n}",
        groups=[{"id": "g1", "name": "Eden Team"}],
        messages=messages,
        settings=settings,
    )
    ingested = counter.count
    assert result.formation_job is not None
    counter.reset()
    started = time.perf_counter()
    job_execute(
        store=store,
        job_id=result.formation_job.id,
        llm=OfflineProvider(),
        work=bound_work(formation_run, store=store, settings=settings),
    )
    return ingested, counter.count, time.perf_counter() - started
