"""Should feedback weigh in ranking by default? Each lifecycle stage alone and together,
on the dev conversations and on conv-26 among generated distractors.

`python -m benchmarks feedback_default [--sizes 100000]` (the sizes are distractor
counts; 100,000 by default, 0 for the dev conversations only).

Kept apart from `benchmarks.retrieval_quality` (whose helpers it reuses: loading,
ranking, the usage the even questions play, the table's row) so the two can change
independently. Usage first: the even questions are searched, their top 5 count as
retrieved, and each is marked useful when it is evidence; every ranker is then measured
on the odd questions only (no question is helped by its own feedback). Recency and MMR
do not read usage, so measuring them after it changes nothing.

The rule (issue 31): a stage is on by default only if it lowers recall (@1, @5, @10)
on none of the datasets; the last lines say so for feedback.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_table
from benchmarks.retrieval_quality import (
    CATEGORIES,
    DATA,
    DEV,
    NO_LIFECYCLE,
    _load,
    _ours,
    _row,
    _turns,
    _usage,
)
from benchmarks.search_scale import _seed
from streams.ranking import FINAL, Ranking
from streams.store import MemoryStore

DISTRACTORS = [100_000]
BASE = "no lifecycle stages"
FEEDBACK = "+ feedback alone"
STAGES: dict[str, Ranking] = {
    BASE: NO_LIFECYCLE,
    FEEDBACK: replace(NO_LIFECYCLE, feedback=True),
    "+ retrieval counts alone": replace(NO_LIFECYCLE, access=True),
    "+ recency alone": replace(NO_LIFECYCLE, recency=True),
    "+ MMR alone": replace(NO_LIFECYCLE, mmr=True),
    "+ all four together": replace(
        NO_LIFECYCLE, feedback=True, access=True, recency=True, mmr=True
    ),
    "defaults (streams.ranking.FINAL)": FINAL,
}
HEADERS = ["dataset: ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"]


def run(sizes: list[int] | None = None) -> None:
    rows: list[list[object]] = []
    with embedded_server() as server:
        client = MongoClient(server.uri, tz_aware=True)
        for path in DEV:
            store = MemoryStore(client, f"bench_feedback_{path.stem.replace('-', '_')}")
            conversation = json.loads(path.read_text())
            turns = _turns(conversation)
            _load(store, turns)
            rows += _measure(store, path.stem, conversation)
            client.drop_database(store.db.name)
        for n in DISTRACTORS if sizes is None else [s for s in sizes if s > 0]:
            store = MemoryStore(client, f"bench_feedback_scale_{n}")
            conversation = json.loads(DATA.read_text())
            started = time.perf_counter()
            _seed(store, _turns(conversation), n)
            print(f"seeded conv-26 + {n:,} distractors in {time.perf_counter() - started:.0f} s")
            rows += _measure(store, f"conv-26 + {n:,} distractors", conversation)
            # Not dropped: the server's directory is removed whole (dropping 100,000 is slow).
        client.close()
    print_table(
        "Lifecycle stages alone and together (odd questions; the even ones gave the "
        "retrievals and the feedback)",
        HEADERS,
        rows,
    )
    _decision(rows)


def _measure(store: MemoryStore, label: str, conversation: dict) -> list[list[object]]:
    questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
    held_out = list(range(1, len(questions), 2))
    _usage(store, [questions[i] for i in range(0, len(questions), 2)])
    rows = []
    for name, ranking in STAGES.items():
        ranker = _ours(store, ranking)
        ranked = {i: ranker(questions[i]["question"]) for i in held_out}
        rows.append(_row(f"{label}: {name}", None, held_out, questions, ranked))
        print("row: " + " | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def _decision(rows: list[list[object]]) -> None:
    """Per dataset, what feedback alone does to recall against no stage at all."""
    by_name = {str(r[0]): r for r in rows}
    lowered = []
    for name in by_name:
        if not name.endswith(f": {BASE}"):
            continue
        dataset = name[: -len(f": {BASE}")]
        base, fed = by_name[name], by_name[f"{dataset}: {FEEDBACK}"]
        deltas = [float(fed[c]) - float(base[c]) for c in (3, 4, 5)]
        print(
            f"{dataset}: feedback alone changes recall@1/5/10 by "
            + " / ".join(f"{d:+.3f}" for d in deltas)
        )
        if any(d < 0 for d in deltas):
            lowered.append(dataset)
    verdict = (
        f"lowers recall on {', '.join(lowered)}: it stays off by default"
        if lowered
        else "lowers recall nowhere: it may be on by default"
    )
    print(f"feedback {verdict}")
