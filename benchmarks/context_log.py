"""Context log, budget and replay: context p50/p95 with the log on and off, replay latency,
and the retrieval trigger table.

Each size seeds a fresh database (`seed`: N observations over N/10 individual scopes),
then gives one target user a consolidation with three versions over time, pending
observations, a group and the collective with pending ones of their own. It times,
in-process and interleaved call by call (so machine load hits both alike):
`context_assemble` with the log off, with the log on (written behind, the default) and
with the log written by each call (flush interval 0, for comparison); then replay
(`as_of`) at times between the versions, and a 200-token budget. The trigger table
lists the explicit-request phrases and the labelled table's counts.

With BENCH_DATA_DIR set, a second run on the same directory reuses what the first
seeded (a million observations take about 40 minutes to seed), so the calls can be
timed again on a quiet machine.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

from pymongo import MongoClient
from pymongo.database import Database

from benchmarks.harness import embedded_server, print_row, print_table, summary_ms
from benchmarks.seed import seed
from memory_admin.runtime.heap import freeze_startup_heap
from streams.context.assemble import context_assemble
from streams.context.replay import context_replay
from streams.core.documents import utcnow
from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.search.retrieval import retrieval_decide
from streams.store import MemoryStore, access_log, write_behind

SIZES = [10_000]
# The other users' observations are never searched by the target's calls (search is per
# visible scope); BENCH_SEED_SEARCH_INDEX=0 seeds them without postings (measured: the
# first 100,000 in 244 s without, 346 s with, on the loaded 2-core machine).
SEED_SEARCH_INDEX = os.environ.get("BENCH_SEED_SEARCH_INDEX", "1") != "0"
CALLS = int(os.environ.get("BENCH_CONTEXT_CALLS", "200"))  # per variant (README: 300)
AGENT = "bench-agent"
USER = "target-user"
GROUPS = [("g-eden", "Eden Team")]
META = "bench_meta"  # the prepared target's moments, for a re-run on a kept data dir
MESSAGES = ["hello there", "Do you remember what I said about the parser?"]
TRIGGER_PHRASES = [
    "Search your memory for my cat's name",
    "Check your notes about my cat",
    "Tell me what was decided",
    "Can you look in your notes for the wifi password?",
    "Check the weather for me.",
    "Search the web for cheap flights.",
]


def run(sizes: list[int] | None = None) -> None:
    rows: list[list[object]] = []
    with embedded_server() as server:
        for size in sizes or SIZES:
            client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
            db = f"bench_context_log_{size}"
            base = MemoryStore(client, db)
            moments = _seeded_moments(client, db, base, size)
            stores = {
                "log off": MemoryStore(client, db, access_flush_seconds=1.0, context_log_days=0),
                "log on (written behind)": MemoryStore(
                    client, db, access_flush_seconds=1.0, context_log_days=7
                ),
                "log on (written per call)": MemoryStore(
                    client, db, access_flush_seconds=0.0, context_log_days=7
                ),
            }
            freeze_startup_heap()  # as a web worker does once loaded (`memory_admin.wsgi`)
            samples = _interleaved(stores)
            write_behind.flush()
            samples["replay (as_of)"] = _replays(base, moments)
            samples["log off, max_tokens=200"] = _budgeted(stores["log off"])
            rows += _rows(size, samples)
            logged = base.seeding.count("context_calls", {"agent_id": AGENT})
            print(f"context calls logged: {logged:,}", flush=True)
            access_log.flush()  # the context calls' access counts, before the client closes
            client.close()  # the server's directory is removed whole: no drop needed
    print_table(
        "Context calls, in-process (ms; calls interleaved log off / on / per call)",
        ["observations", "call", "calls", "p50", "p95", "p95 vs log off"],
        rows,
    )
    _trigger_table()


def _seeded_moments(
    client: MongoClient[dict[str, Any]], db: str, base: MemoryStore, size: int
) -> list:
    """Seed and prepare the target (unless BENCH_DATA_DIR kept them); the prepared moments."""
    moments = _seeded_before(client[db])
    if moments is not None:
        print(f"reusing the {size:,} observations seeded in BENCH_DATA_DIR")
        return moments
    seconds = seed(
        base,
        agent_id=AGENT,
        scopes=max(10, size // 10),
        observations=size,
        search_index=SEED_SEARCH_INDEX,
    )
    postings = "with" if SEED_SEARCH_INDEX else "without"
    print(f"seeded {size:,} observations ({postings} postings) in {seconds:.0f} s")
    moments = _prepare(base)
    client[db][META].insert_one({"_id": "moments", "moments": moments})
    return moments


def _interleaved(stores: dict[str, MemoryStore]) -> dict[str, list[float]]:
    """CALLS context calls on each store, interleaved (so load hits them alike), timed."""
    samples: dict[str, list[float]] = {label: [] for label in stores}
    for i in range(CALLS):
        for label, store in stores.items():
            started = time.perf_counter()
            context_assemble(
                store=store,
                agent_id=AGENT,
                user_id=USER,
                groups=GROUPS,
                message=MESSAGES[i % 2],
                session_id="bench",
            )
            samples[label].append(time.perf_counter() - started)
    return samples


def _replays(base: MemoryStore, moments: list) -> list[float]:
    """Context replayed as of the prepared moments, timed."""
    replays: list[float] = []
    for i in range(CALLS // 3):
        started = time.perf_counter()
        context_replay(
            store=base,
            agent_id=AGENT,
            user_id=USER,
            groups=GROUPS,
            message=MESSAGES[i % 2],
            as_of=moments[i % len(moments)],
        )
        replays.append(time.perf_counter() - started)
    return replays


def _budgeted(store: MemoryStore) -> list[float]:
    """Context calls with a 200-token budget, timed."""
    budget: list[float] = []
    for i in range(CALLS // 3):
        started = time.perf_counter()
        context_assemble(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            groups=GROUPS,
            message=MESSAGES[i % 2],
            max_tokens=200,
        )
        budget.append(time.perf_counter() - started)
    return budget


def _rows(size: int, samples: dict[str, list[float]]) -> list[list[object]]:
    """A row per call kind; the logged ones with their p95 against the log off."""
    rows: list[list[object]] = []
    off_p95 = summary_ms(samples["log off"])[1]
    for label, found in samples.items():
        p50, p95, mean = summary_ms(found)
        versus = f"{(p95 / off_p95 - 1) * 100:+.0f}%" if label.startswith("log on") else ""
        rows.append([f"{size:,}", label, len(found), f"{p50:.1f}", f"{p95:.1f}", versus])
        print_row(rows[-1])
    return rows


def _seeded_before(db: Database) -> list | None:
    """The moments of a run that seeded this database and prepared its target (kept by
    BENCH_DATA_DIR), so a quiet re-run measures without seeding a million again."""
    if not os.environ.get("BENCH_DATA_DIR"):
        return None
    found = db[META].find_one({"_id": "moments"})
    return found["moments"] if found else None


def _prepare(store: MemoryStore) -> list:
    """The target user's memory with history; the moments between its versions."""
    user, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, USER), display_name="Target"
    )
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(AGENT, GROUPS[0][0]), display_name=GROUPS[0][1]
    )
    collective, _ = scope_get_or_create(store=store, key=ScopeKey.collective(AGENT))
    moments = []
    for version, text in enumerate(
        [
            "Target maintains the Rust parser. Target prefers short answers.",
            "Target maintains the Rust parser and the lexer. Target prefers short answers.",
            "Target maintains the Rust parser, the lexer and the docs. Target likes tea.",
        ]
    ):
        fresh = scope_get(store=store, scope_id=user.id)
        consolidation_edit(
            store=store, scope=fresh, text=text, expected_version=version, actor="bench"
        )
        for n in range(5):
            observation_add(store=store, scope=fresh, content=f"Parser note {version}-{n}.")
        time.sleep(0.01)
        moments.append(utcnow() - timedelta(milliseconds=5))
    consolidation_edit(
        store=store, scope=group, text="The team ships on Fridays.", expected_version=0, actor="b"
    )
    for n in range(6):
        observation_add(store=store, scope=group, content=f"Team fact {n}: demos on Fridays.")
        observation_add(store=store, scope=collective, content=f"Users ask for export {n}.")
    return moments


def _trigger_table() -> None:
    from tests.streams.retrieval_cases import CASES, KNOWN, confusion

    rows = []
    for message in TRIGGER_PHRASES:
        decision = retrieval_decide(message=message, known_text=KNOWN)
        rows.append([message, "fires" if decision.triggered else "no", decision.reason])
    print_table("Retrieval trigger, explicit requests", ["message", "retrieval", "reason"], rows)
    result = confusion()
    print_table(
        "Retrieval heuristics on the labelled table (tests/streams/retrieval_cases.py)",
        ["messages", "should retrieve", "false positives", "false negatives"],
        [
            [
                len(CASES),
                sum(1 for _, wanted in CASES if wanted),
                len(result["false_positives"]),
                len(result["false_negatives"]),
            ]
        ],
    )
