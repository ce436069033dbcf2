"""Retrieval quality on a long conversation (LoCoMo), against a plain BM25 baseline.

Every turn of the conversation becomes one observation of one user's individual
scope, written through the service write path (`append_in_transaction`, which
indexes it), with its turn id in `source_message_ids`, its session in
`source_session_id`, its session date as `observed_at` and its image caption
appended. Each question of categories 1 to 4
is asked through `search_observations`; a question's recall@k is the share of its
evidence turns in the top k, hit@5 whether any is in the top 5. The baseline is
`rank_bm25.BM25Okapi` over the same turns, lowercased words, no stemming, no stop
words. Then last wave's ranking (BM25 on our index), each mechanism of
`streams.search.ranking` added to it alone, the final ranking, and the final ranking with one
mechanism taken out (the mechanisms interact: proximity alone on last wave's length
normalisation does not help, in the final ranking it does), all on the same store.
Category 5 (adversarial, unanswerable) is left out, as the dataset's README asks.

The context endpoint's retrieval is measured on the same questions (how often its
heuristics fire, and the recall of the observations it retrieves), and the
heuristics' labelled table is scored too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from statistics import fmean
from typing import Any

from pymongo import MongoClient
from rank_bm25 import BM25Okapi

from benchmarks.harness import embedded_server, print_table
from benchmarks.locomo import (
    CATEGORIES,
    DEV,
    _load,
    _ours,
    _turns,
)
from benchmarks.retrieval_context import context_rows
from benchmarks.retrieval_loo import (
    KS,
    Dev,
    changed,
    dev_load,
    fit,
    hit_at,
    leave_one_out,
    recall_at,
    switch_effects,
)
from streams.search.ranking import (
    FINAL,
    LAST_WAVE,
    POOL,
    PREVIOUS,
    SHORT_B,
    SHORT_K1,
    Ranking,
)
from tests.streams.retrieval_cases import CASES, confusion

WORD = re.compile(r"\w+")


MECHANISMS: dict[str, Ranking] = {
    "last wave's ranking (BM25, stems, stop words)": LAST_WAVE,
    "+ term weighting (k1 0.9, b 0.4)": replace(LAST_WAVE, k1=SHORT_K1, b=SHORT_B),
    "+ no length normalisation (k1 0.9, b 0)": replace(LAST_WAVE, k1=SHORT_K1, b=0.0),
    "+ question-form words out of the query": replace(LAST_WAVE, question_words=True),
    "+ people named in the query": replace(LAST_WAVE, people=True),
    "+ names weigh at most the topic's terms": replace(LAST_WAVE, names=True),
    "+ people, names capped": replace(LAST_WAVE, people=True, names=True),
    "+ term proximity (BM25TP)": replace(LAST_WAVE, proximity=True),
    "+ session neighbours (of the best 10)": replace(LAST_WAVE, neighbours=True),
    "+ session neighbours (of the pool) and their support": replace(
        LAST_WAVE, neighbours=True, support=True, seeds=POOL
    ),
    "+ session neighbours (of the pool) scored by their own text": replace(
        LAST_WAVE, neighbours=True, neighbour_terms=True, seeds=POOL
    ),
    "+ session neighbours two turns around the best 15 (share 0.7)": replace(
        LAST_WAVE, neighbours=True, seeds=FINAL.seeds, reach=FINAL.reach, share=FINAL.share
    ),
    "+ dates for when-questions": replace(LAST_WAVE, dates=True),
    "previous final ranking (before proximity, support, names)": PREVIOUS,
    "final ranking": FINAL,
    "final without term proximity": replace(FINAL, proximity=False),
    "final without neighbour support": replace(FINAL, support=False),
    "final without people": replace(FINAL, people=False),
    "final without the names cap": replace(FINAL, names=False),
    "final without question-form words out and dates": replace(
        FINAL, question_words=False, dates=False
    ),
    "final with length normalisation (b 0.4)": replace(FINAL, b=SHORT_B),
    "final without neighbours scored by their own text": replace(FINAL, neighbour_terms=False),
    "final with neighbours one turn around the pool (share 0.5)": replace(
        FINAL, seeds=POOL, reach=1, share=0.5
    ),
}
BASELINE = "BM25 baseline (rank_bm25)"
CONTEXT = "context retrieval (top 5)"
# The stages of this issue, each alone on the final ranking.
STAGES: dict[str, Ranking] = {
    "final + pseudo-relevance feedback (RM3)": replace(FINAL, prf=True),
    "final + multi-hop decomposition": replace(FINAL, multihop=True),
    "final without dates resolved (when)": replace(FINAL, when=False),
}
HEADER = ["ranker", "conversation", "questions", "recall@1", "recall@5", "recall@10", "hit@5"]


def _supersession_only(argv: list[str]) -> None:
    import argparse

    from benchmarks.retrieval_supersession import run_modes

    parser = argparse.ArgumentParser(prog="python -m benchmarks retrieval_quality")
    parser.add_argument("--supersession", choices=["on", "off", "both"], default="both")
    chosen = parser.parse_args(argv).supersession
    run_modes(["off", "on"] if chosen == "both" else [chosen])


def run(sizes: list[int] | None = None, argv: list[str] | None = None) -> None:
    """`--supersession on|off|both` runs only the supersession comparison
    (`benchmarks.retrieval_supersession`); without it, every table (supersession on)."""
    del sizes  # one dataset, one size
    if argv:
        _supersession_only(argv)
        return
    started = time.perf_counter()
    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        devs = [
            dev_load(client, path, load=_load, turns_of=_turns, categories=CATEGORIES)
            for path in DEV
        ]
        baseline = {d.name: _baseline_ranked(d) for d in devs}
        rankers = {**MECHANISMS, **STAGES}
        rows: list[list[object]] = []
        for name in [BASELINE, *rankers]:
            per = {
                d.name: baseline[d.name] if name == BASELINE else d.ranked(rankers[name])
                for d in devs
            }
            rows += _rows(name, devs, per)
        print_table(
            "Retrieval quality on the LoCoMo dev conversations ("
            + ", ".join(
                f"{d.name}: {len(d.turns)} turns, {len(d.questions)} questions" for d in devs
            )
            + "; categories 1-4), each ranker per conversation and the mean of the three",
            HEADER,
            rows,
        )
        _categories(devs, baseline)
        context_rows(devs)
        _leave_one_out(devs)
        _timings(devs)
        print(f"\n(retrieval_quality ranking tables in {time.perf_counter() - started:.0f} s)")
        from benchmarks.retrieval_lifecycle import lifecycle_table

        lifecycle_table(client, devs)
        client.close()
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


def _rows(name: str, devs: list[Dev], per: dict[str, list[list[str]]]) -> list[list[object]]:
    """One row per conversation and one for their mean (of the conversations' figures)."""
    rows = []
    figures = []
    for d in devs:
        ranked = per[d.name]
        pairs = list(zip(d.questions, ranked, strict=True))
        f = [fmean(recall_at(q, r, k) for q, r in pairs) for k in KS]
        f.append(fmean(hit_at(q, r, 5) for q, r in pairs))
        figures.append(f)
        rows.append([name, d.name, len(d.questions), *(f"{x:.3f}" for x in f)])
    mean = [fmean(column) for column in zip(*figures, strict=False)]
    rows.append([name, "mean", sum(len(d.questions) for d in devs), *(f"{x:.3f}" for x in mean)])
    return rows


def _categories(devs: list[Dev], baseline: dict[str, list[list[str]]]) -> None:
    rows = []
    for name in [BASELINE, "final ranking"]:
        for category, label in CATEGORIES.items():
            for d in devs:
                ranked = baseline[d.name] if name == BASELINE else d.ranked(FINAL)
                chosen = [i for i, q in enumerate(d.questions) if q["category"] == category]
                rows.append(_category_row(name, f"{category} {label}", d, chosen, ranked))
    print_table(
        "Per category (recall@5, each conversation)",
        ["ranker", "category", "conversation", "questions", "recall@1", "recall@5", "hit@5"],
        rows,
    )


def _category_row(name: str, label: str, d: Dev, chosen: list[int], ranked: list) -> list[object]:
    def mean(f: Callable[[int], float]) -> str:
        return f"{fmean(f(i) for i in chosen):.3f}" if chosen else "-"

    return [
        name,
        label,
        d.name,
        len(chosen),
        mean(lambda i: recall_at(d.questions[i], ranked[i], 1)),
        mean(lambda i: recall_at(d.questions[i], ranked[i], 5)),
        mean(lambda i: hit_at(d.questions[i], ranked[i], 5)),
    ]


def _leave_one_out(devs: list[Dev]) -> None:
    """Every constant and switch fitted on two conversations, measured on the third."""
    folds = leave_one_out(devs)
    rows = []
    for f in folds:
        d = f.held_out
        rows.append(
            [
                d.name,
                f"{d.recall(LAST_WAVE):.3f}",
                f"{d.recall(FINAL):.3f}",
                f"{d.recall(f.fitted):.3f}",
                f"{d.recall(f.fitted, 1):.3f}",
                f"{d.recall(f.fitted, 10):.3f}",
                ", ".join(f"{k}={v}" for k, v in f.changed().items()) or "(the defaults)",
            ]
        )
    means = [fmean(float(r[i]) for r in rows) for i in range(1, 6)]
    rows.append(["mean", *(f"{m:.3f}" for m in means), ""])
    print_table(
        "Leave-one-out: fitted on the other two conversations, measured on the held-out one",
        [
            "held out",
            "recall@5 last wave",
            "recall@5 defaults",
            "recall@5 fitted",
            "recall@1 fitted",
            "recall@10 fitted",
            "fitted values that differ from the defaults",
        ],
        rows,
    )
    effects = switch_effects(folds)
    print_table(
        "Leave-one-out per switch: held-out recall@5 of the fitted ranking with the switch on, "
        "less with it off",
        ["switch", "default", *(f.held_out.name for f in folds), "mean", "verdict"],
        [
            [
                name,
                "on" if getattr(FINAL, name) else "off",
                *(f"{x:+.3f}" for x in deltas),
                f"{fmean(deltas):+.3f}",
                "helps held-out" if fmean(deltas) >= 0.001 else "no held-out gain",
            ]
            for name, deltas in effects.items()
        ],
    )
    everything = fit(devs)
    print(
        "fitted on all three: "
        + (", ".join(f"{k}={v}" for k, v in changed(everything).items()) or "the defaults")
        + f" (mean recall@5 {fmean(d.recall(everything) for d in devs):.3f}: the dev mean, "
        "not a prediction; the leave-one-out mean is)"
    )


def loo_only() -> None:
    """The leave-one-out tables alone (`python -c "from benchmarks.retrieval_quality
    import loo_only; loo_only()"`, with DJANGO_SETTINGS_MODULE set and django set up)."""
    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        devs = [
            dev_load(client, path, load=_load, turns_of=_turns, categories=CATEGORIES)
            for path in DEV
        ]
        _leave_one_out(devs)
        client.close()


def _timings(devs: list[Dev]) -> None:
    """In-process search latency (store reads included, nothing memoised), final ranking
    with each stage of this issue."""
    rows = []
    for name, ranking in [("final ranking", FINAL), *STAGES.items()]:
        spent: list[float] = []
        for d in devs:
            ranker = _ours(d.store, ranking, spent, now=d.now)
            for q in d.questions[::3]:
                ranker(q["question"])
        spent.sort()
        rows.append(
            [
                name,
                len(spent),
                f"{spent[len(spent) // 2]:.1f}",
                f"{spent[int(0.95 * (len(spent) - 1))]:.1f}",
            ]
        )
    print_table(
        f"In-process search latency on the dev conversations (every third question, limit 10; "
        f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])})",
        ["ranking", "searches", "p50 ms", "p95 ms"],
        rows,
    )


def _baseline_ranked(d: Dev) -> list[list[str]]:
    rank = _baseline(d.turns)
    return [rank(q["question"]) for q in d.questions]


def _baseline(turns: list[tuple[str, str, datetime]]) -> Callable[[str], list[str]]:
    bm25 = BM25Okapi([WORD.findall(text.lower()) for _, text, _ in turns])
    ids = [turn_id for turn_id, _, _ in turns]

    def rank(question: str) -> list[str]:
        scores = bm25.get_scores(WORD.findall(question.lower()))
        order = sorted(range(len(ids)), key=lambda i: -scores[i])
        return [ids[i] for i in order[: max(KS)]]

    return rank


def lifecycle_at_scale(distractors: int) -> None:
    """The lifecycle table for conv-26 among `distractors` generated observations
    (`benchmarks.retrieval_lifecycle`)."""
    from benchmarks.retrieval_lifecycle import lifecycle_at_scale as at_scale

    at_scale(distractors)
