"""Issue 31's lifecycle ranking stages on the dev conversations (part of
`retrieval_quality`), and among generated distractors (`lifecycle_at_scale`)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_table
from benchmarks.locomo import (
    AGENT,
    CATEGORIES,
    DATA,
    USER,
    _ours,
    _row,
    _turns,
)
from benchmarks.retrieval_loo import Dev
from streams.search.index import search_observations
from streams.search.ranking import FINAL, Ranking
from streams.store import MemoryStore

# -- lifecycle stages (issue 31) --------------------------------------------------------

BASE_RANKER = "final without lifecycle stages"
NO_LIFECYCLE = replace(FINAL, feedback=False, access=False, recency=False, mmr=False)
LIFECYCLE: dict[str, Ranking] = {
    BASE_RANKER: NO_LIFECYCLE,
    "+ recency exp(-age/30 days)": replace(NO_LIFECYCLE, recency=True),
    "+ MMR among the top 10": replace(NO_LIFECYCLE, mmr=True),
}
AFTER_FEEDBACK: dict[str, Ranking] = {
    "+ feedback prior": replace(NO_LIFECYCLE, feedback=True),
    "+ retrieval counts": replace(NO_LIFECYCLE, access=True),
    "+ importance (feedback and retrieval counts)": replace(
        NO_LIFECYCLE, feedback=True, access=True
    ),
    "+ importance, recency and MMR together": replace(
        NO_LIFECYCLE, feedback=True, access=True, recency=True, mmr=True
    ),
    "final ranking (defaults)": FINAL,
}


def lifecycle_table(client: MongoClient, devs: list[Dev]) -> None:
    """Each lifecycle stage alone and together, on every dev conversation.

    Retrieval counts and feedback need usage, which the dataset does not have: the even
    questions play it (each is searched, its top 5 count as retrieved, and the agent
    says of each whether it was evidence: useful, or not), then every ranker is measured
    on the odd questions only, so no question is helped by its own feedback.
    """
    rows: list[list[object]] = []
    scores: dict[str, dict[str, tuple[float, float]]] = {}
    for d in devs:  # last: the usage it plays writes counts and feedback to the stores
        store, questions = d.store, d.questions
        held_out = list(range(1, len(questions), 2))
        for name, ranking in LIFECYCLE.items():
            ranker = _ours(store, ranking, now=d.now)
            ranked = {i: ranker(questions[i]["question"]) for i in held_out}
            rows.append(_row(f"{d.name}: {name}", None, held_out, questions, ranked))
            scores.setdefault(name, {})[d.name] = recall_and_mrr(held_out, questions, ranked)
        _usage(store, [questions[i] for i in range(0, len(questions), 2)])
        for name, ranking in AFTER_FEEDBACK.items():
            ranker = _ours(store, ranking, now=d.now)
            ranked = {i: ranker(questions[i]["question"]) for i in held_out}
            rows.append(_row(f"{d.name}: {name}", None, held_out, questions, ranked))
            scores.setdefault(name, {})[d.name] = recall_and_mrr(held_out, questions, ranked)
        client.drop_database(store.name)
    print_table(
        "Lifecycle ranking stages on the dev conversations (odd questions; the even ones "
        "gave the retrievals and feedback)",
        ["ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"],
        rows,
    )
    switch_effects(scores)


# The settings' switches (`streams.search.ranking_settings`) and the ranker that measures each.
SWITCH_RANKERS = {
    "recency": "+ recency exp(-age/30 days)",
    "mmr": "+ MMR among the top 10",
    "feedback": "+ feedback prior",
}


def recall_and_mrr(
    chosen: list[int], questions: list[dict], ranked: dict[int, list[str]]
) -> tuple[float, float]:
    """Mean recall@5 and mean reciprocal rank (of the first evidence turn, within 10)."""
    recalls, reciprocal = [], []
    for i in chosen:
        evidence = set(questions[i]["evidence"])
        top = ranked[i]
        recalls.append(len(evidence & set(top[:5])) / len(evidence) if evidence else 0.0)
        first = next((r for r, m in enumerate(top[:10], 1) if m in evidence), None)
        reciprocal.append(1.0 / first if first else 0.0)
    return fmean(recalls), fmean(reciprocal)


def switch_effects(scores: dict[str, dict[str, tuple[float, float]]]) -> None:
    """Each settings switch against the final ranking without lifecycle stages: the
    recall@5 and MRR change, mean of the dev conversations (the figures
    `streams.search.ranking_settings.MEASURED_EFFECT` holds and the settings forms show)."""
    base = scores[BASE_RANKER]
    rows: list[list[object]] = []
    for switch, ranker in SWITCH_RANKERS.items():
        on = scores[ranker]
        names = sorted(on)
        recall = fmean(on[n][0] - base[n][0] for n in names)
        mrr = fmean(on[n][1] - base[n][1] for n in names)
        rows.append([switch, ", ".join(names), f"{recall:+.3f}", f"{mrr:+.3f}"])
    print_table(
        "Lifecycle switches: effect of each alone (odd questions, mean of the conversations)",
        ["switch", "measured on", "recall@5 delta", "MRR delta"],
        rows,
    )


def lifecycle_at_scale(distractors: int) -> None:
    """The lifecycle table for conv-26 among `distractors` generated observations (newer
    than the conversation: what recency must not favour), seeded as `search_scale` does.
    `python -c "...; lifecycle_at_scale(100_000)"`; not part of `run()` (seeding is slow)."""
    from benchmarks.search_scale import _seed

    conversation = json.loads(DATA.read_text())
    turns = _turns(conversation)
    questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
    held_out = list(range(1, len(questions), 2))
    rows: list[list[object]] = []
    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        store = MemoryStore(client, f"bench_lifecycle_scale_{distractors}")
        started = time.perf_counter()
        _seed(store, turns, distractors)
        seeded = time.perf_counter() - started
        label = f"conv-26 + {distractors:,} distractors"
        for name, ranking in LIFECYCLE.items():
            ranker = _ours(store, ranking)
            ranked = {i: ranker(questions[i]["question"]) for i in held_out}
            rows.append(_row(f"{label}: {name}", None, held_out, questions, ranked))
        _usage(store, [questions[i] for i in range(0, len(questions), 2)])
        for name, ranking in AFTER_FEEDBACK.items():
            ranker = _ours(store, ranking)
            ranked = {i: ranker(questions[i]["question"]) for i in held_out}
            rows.append(_row(f"{label}: {name}", None, held_out, questions, ranked))
        client.drop_database(store.name)
        client.close()
    print_table(
        f"Lifecycle ranking stages among distractors (odd questions; seeded in {seeded:.0f} s)",
        ["ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"],
        rows,
    )


def run(sizes: list[int] | None = None) -> None:
    """`python -m benchmarks retrieval_lifecycle`: the lifecycle tables alone (the three dev
    conversations, loaded as `retrieval_quality` loads them), with the switches' effect."""
    del sizes
    from benchmarks.locomo import DEV, _load
    from benchmarks.retrieval_loo import dev_load

    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        devs = [
            dev_load(client, path, load=_load, turns_of=_turns, categories=CATEGORIES)
            for path in DEV
        ]
        lifecycle_table(client, devs)
        client.close()


def _usage(store: MemoryStore, questions: list[dict]) -> None:
    """The agent's usage on these questions: top 5 retrieved, each marked useful or not."""
    from bson import ObjectId

    for question in questions:
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=question["question"],
            limit=5,
            record_access=False,
            ranking=NO_LIFECYCLE,
        )
        evidence = set(question["evidence"])
        ids = [ObjectId(h.observation.id) for h in hits]
        store.observations.record_access(ids, now=datetime.now(UTC))
        for hit, oid in zip(hits, ids, strict=True):
            useful = hit.observation.source_message_ids[0] in evidence
            store.observations.add_feedback(oid, useful=useful, call_id=None)
