"""Recall and latency as one scope grows: the dev conversation among N distractors.

The LoCoMo dev conversation (conv-26) is placed, oldest first, in one user's scope,
followed by N generated distractor observations, N in {0, 10K, 100K} (or `--sizes`).
A distractor is 6 to 24 words drawn from the conversation's own word frequencies
(so its common words, "like", "kids", "time", are common in the distractors too),
said by one of 40 made-up speakers: the two speakers' names are not drawn. Seeding goes
through the bulk path (observations with `insert_many`, the index built whole by
`search_index_build`), not HTTP. Each question of categories 1 to 4 is then asked
through `search_observations` in-process (final ranking, limit 10): recall@5 and the
latency of the search, the finds one search sends (the scope, the index, the
candidates, their neighbours), the index's size, and recall@5 when every chunk of
every term is read (`READ_ALL`): what the cut of common terms costs, apart from what
the distractors themselves cost.

Searches run as in a web worker, whose startup heap is frozen (`memory_admin.runtime.heap`): a
full collection walking it was most of the p95. `SEARCH_SCALE_STAGES=0` leaves out the
query-understanding table (text-only latency alone: `SEARCH_SCALE_STAGES=0 python -m
benchmarks search_scale --sizes 100000`). With BENCH_DATA_DIR set, a second run on the
same directory reuses what the first seeded (100,000 distractors take about 4 minutes).
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter, embedded_server, print_row, print_table
from benchmarks.locomo import AGENT, CATEGORIES, DATA, USER, _turns, turn_observations
from memory_admin.runtime.heap import freeze_startup_heap
from streams.context.assemble import context_assemble
from streams.core.documents import Observation, Scope
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.search.index import search_index_build, search_observations
from streams.search.ranking import FINAL, Ranking
from streams.store import MemoryStore
from streams.store import postings as index_format
from streams.store import search as layout

SIZES = [0, 10_000, 100_000]
# The stages of issue 28 on and off (dates resolved against the day after the conversation).
STAGE_ROWS: dict[str, Ranking] = {
    "final (dates resolved on)": FINAL,
    "final, dates resolved off": replace(FINAL, when=False),
    "final, names cap off": replace(FINAL, names=False),
    "final + pseudo-relevance feedback": replace(FINAL, prf=True),
    "final + multi-hop decomposition": replace(FINAL, multihop=True),
}
WORD = re.compile(r"[A-Za-z']+")
SPEAKERS = [f"Person{chr(65 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
BATCH = 5000
STAGES = os.environ.get("SEARCH_SCALE_STAGES", "1") != "0"


HEADERS = [
    "N distractors",
    "scope size",
    "seed s",
    "index docs",
    "recall@5",
    "recall@5 all chunks read",
    "p50 ms",
    "p95 ms",
    "p50 ms, second pass",
    "p95 ms, second pass",
    "context p50 ms",
    "context p95 ms",
    "finds/search",
]


def run(sizes: list[int] | None = None) -> None:
    conversation = json.loads(DATA.read_text())
    turns = _turns(conversation)
    questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
    rows = []
    stage_rows: list[list[object]] = []
    started_load = Path("/proc/loadavg").read_text().split()[:3]
    with embedded_server() as server:
        for n in sizes or SIZES:
            counter = CommandCounter()
            client: MongoClient[dict[str, Any]] = MongoClient(
                server.uri, tz_aware=True, event_listeners=[counter]
            )
            store = MemoryStore(client, f"bench_scale_{n}")
            seeded = f"{_seed(store, turns, n):.0f}" if _unseeded(store, turns, n) else "kept"
            freeze_startup_heap()  # as a web worker does once loaded (`memory_admin.wsgi`)
            rows.append(_size_row(store, questions, counter, [n, n + len(turns), seeded]))
            print_row(rows[-1])
            now = turns[-1][2] + timedelta(days=1)
            for name, ranking in STAGE_ROWS.items() if STAGES else ():
                recall, spent, trips = _ask(store, questions, counter, ranking, now)
                stage_rows.append(
                    [f"{n:,}", name, f"{recall:.3f}", *_p50_p95(spent), f"{max(trips)}"]
                )
                print_row(stage_rows[-1])
            if not os.environ.get("BENCH_DATA_DIR"):
                client.drop_database(f"bench_scale_{n}")
            client.close()
    print_table(
        f"Search at scale: LoCoMo conv-26 ({len(turns)} turns, {len(questions)} questions) "
        f"in one scope among N distractors (chunks of {index_format.CHUNK}, top block "
        f"{index_format.TOP}, rare up to {index_format.RARE_CHUNKS} chunks), in-process, "
        "embedded store",
        HEADERS,
        rows,
    )
    if not STAGES:
        return
    print_table(
        "Search at scale with the query-understanding stages (issue 28), one pass each "
        f"after the two above; load average {' '.join(started_load)} at the start, "
        f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])} at the end",
        ["N distractors", "ranking", "recall@5", "p50 ms", "p95 ms", "finds/search"],
        stage_rows,
    )


def _size_row(
    store: MemoryStore, questions: list[dict], counter: CommandCounter, sized: list[object]
) -> list[object]:
    """One size's row: two passes of search, the context calls, and a pass reading every
    chunk (the exact recall); `sized` is (N, scope size, seed seconds or "kept")."""
    recall, spent, trips = _ask(store, questions, counter)
    _, steady, _ = _ask(store, questions, counter)  # the seed written out by now
    context_ms = _context(store, questions)
    layout.READ_ALL = True
    try:
        exact, _, _ = _ask(store, questions, counter)
    finally:
        layout.READ_ALL = False
    n, size, seeded = sized
    docs = store.seeding.estimated_count("search_index")
    return [
        f"{n:,}",
        f"{size:,}",
        seeded,
        f"{docs:,}",
        f"{recall:.3f}",
        f"{exact:.3f}",
        *_p50_p95(spent),
        *_p50_p95(steady),
        *_p50_p95(context_ms),
        f"{max(trips)}",
    ]


def _p50_p95(samples: list[float]) -> list[str]:
    """The median and the 95th percentile, in ms, as the tables print them."""
    ordered = sorted(samples)
    return [f"{ordered[len(ordered) // 2]:.1f}", f"{ordered[int(0.95 * (len(ordered) - 1))]:.1f}"]


def _context(store: MemoryStore, questions: list[dict]) -> list[float]:
    """Every question as a message to the context endpoint's assembly (retrieval fires
    on nearly all of them; the log off: `context_log` times it): milliseconds, sorted."""
    spent: list[float] = []
    for q in questions:
        started = time.perf_counter()
        context_assemble(
            store=store, agent_id=AGENT, user_id=USER, message=q["question"], record_access=False
        )
        spent.append((time.perf_counter() - started) * 1000)
    return sorted(spent)


def _ask(
    store: MemoryStore,
    questions: list[dict],
    counter: CommandCounter,
    ranking: Ranking = FINAL,
    now: datetime | None = None,
) -> tuple[float, list[float], list[int]]:
    """Every question through search: mean recall@5, milliseconds and finds per search."""
    spent: list[float] = []
    recalls: list[float] = []
    trips: list[int] = []
    for q in questions:
        counter.reset()
        started = time.perf_counter()
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=q["question"],
            limit=10,
            record_access=False,
            ranking=ranking,
            now=now,
        )
        spent.append((time.perf_counter() - started) * 1000)
        trips.append(counter.by_name.get("find", 0))
        top = {h.observation.source_message_ids[0] for h in hits[:5]}
        evidence = set(q["evidence"])
        recalls.append(len(evidence & top) / len(evidence) if evidence else 0.0)
    return fmean(recalls), spent, trips


def seeded_observations(store: MemoryStore, turns: list, n: int) -> tuple[Scope, list[Observation]]:
    """The conversation's scope, and its turns then `n` distractors as observations (not
    stored yet): words drawn from the conversation's own vocabulary, names left out."""
    store.ensure_indexes()
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, USER))
    rng = random.Random(n)
    names = {t.split(":")[0].lower() for _, t, _ in turns}
    words = Counter(w.lower() for _, t, _ in turns for w in WORD.findall(t.split(":", 1)[1]))
    for name in names:
        words.pop(name, None)
    vocabulary, weights = list(words), list(words.values())
    observations = turn_observations(scope.id, turns, consolidated=True)
    for i, observation in enumerate(observations, start=1):
        observation.seq = i
    last = turns[-1][2]
    for i in range(n):
        body = " ".join(rng.choices(vocabulary, weights, k=rng.randint(6, 24)))
        observations.append(
            Observation(
                scope_id=scope.id,
                agent_id=AGENT,
                content=f"{rng.choice(SPEAKERS)}: {body}",
                observed_at=last + timedelta(minutes=i + 1),
                created_at=last + timedelta(minutes=i + 1),
                source_session_id=f"X{i // 20}",
                source_message_ids=[f"X{i // 20}:{i % 20}"],
                related_user_ids=[USER],
                consolidated=True,
                seq=len(turns) + i + 1,
            )
        )
    return scope, observations


def _unseeded(store: MemoryStore, turns: list, n: int) -> bool:
    """Whether the store lacks this size's seed (a kept BENCH_DATA_DIR holds it already)."""
    seeded = store.seeding.estimated_count("observations") == n + len(turns)
    if seeded:
        store.ensure_indexes()  # seeded by an earlier version, perhaps
    else:
        store.seeding.drop_database()  # a seed cut short starts over
    return not seeded


def _seed(store: MemoryStore, turns: list, n: int) -> float:
    """The conversation, then `n` distractors, stored and indexed in bulk; seconds."""
    started = time.perf_counter()
    scope, observations = seeded_observations(store, turns, n)
    for start in range(0, len(observations), BATCH):
        store.seeding.insert_many(
            "observations",
            [o.to_mongo() for o in observations[start : start + BATCH]],
            ordered=False,
        )
    search_index_build(store=store, observations=observations)
    store.seeding.update_one(
        "scopes",
        {"_id": ObjectId(scope.id)},
        {"$set": {"observation_seq": len(observations), "observation_count": len(observations)}},
    )
    return time.perf_counter() - started
