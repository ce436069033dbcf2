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
`streams.ranking` added to it alone, the final ranking, and the final ranking with one
mechanism taken out (the mechanisms interact: proximity alone on last wave's length
normalisation does not help, in the final ranking it does), all on the same store.
Category 5 (adversarial, unanswerable) is left out, as the dataset's README asks.

The context endpoint's retrieval is measured on the same questions (how often its
heuristics fire, and the recall of the observations it retrieves), and the
heuristics' labelled table is scored too.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean
from typing import Any

from pymongo import MongoClient
from rank_bm25 import BM25Okapi

from benchmarks.harness import embedded_server, print_table
from streams.context import context_assemble
from streams.documents import Observation
from streams.observations import append_in_transaction
from streams.ranking import FINAL, LAST_WAVE, POOL, PREVIOUS, SHORT_B, SHORT_K1, Ranking
from streams.scopes import ScopeKey, scope_get_or_create
from streams.search import search_observations
from streams.store import MemoryStore
from tests.streams.retrieval_cases import CASES, confusion

DATA = Path("/work/shared/data/locomo-dev/conv-26.json")
DEV = sorted(DATA.parent.glob("conv-*.json"))  # the dev conversations (lifecycle stages)
AGENT = "bench-agent"
USER = "locomo-user"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)
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
    "final with length normalisation (b 0.4)": replace(FINAL, b=SHORT_B),
    "final without neighbours scored by their own text": replace(FINAL, neighbour_terms=False),
    "final with neighbours one turn around the pool (share 0.5)": replace(
        FINAL, seeds=POOL, reach=1, share=0.5
    ),
}
BASELINE = "BM25 baseline (rank_bm25)"
CONTEXT = "context retrieval (top 5)"


def run(sizes: list[int] | None = None) -> None:
    del sizes  # one dataset, one size
    conversation = json.loads(DATA.read_text())
    turns = _turns(conversation)
    questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
    rankers: dict[str, Callable[[str], list[str]]] = {BASELINE: _baseline(turns)}
    with embedded_server() as server:
        client = MongoClient(server.uri, tz_aware=True)
        store = MemoryStore(client, "bench_quality")
        _load(store, turns)
        timings: dict[Ranking, list[float]] = {LAST_WAVE: [], FINAL: []}
        for name, ranking in MECHANISMS.items():
            rankers[name] = _ours(store, ranking, timings.get(ranking))
        fired: list[bool] = []
        rankers[CONTEXT] = _context(store, fired)
        rows = []
        for name, ranker in rankers.items():
            ranked = {i: ranker(q["question"]) for i, q in enumerate(questions)}
            for category in [None, *CATEGORIES]:
                chosen = [i for i, q in enumerate(questions) if category in (None, q["category"])]
                rows.append(_row(name, category, chosen, questions, ranked))
        client.close()
    print_table(
        f"Retrieval quality on LoCoMo conv-26: {len(turns)} turns as observations, "
        f"{len(questions)} questions (categories 1-4)",
        ["ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"],
        rows,
    )
    overall = {r[0]: float(r[4]) for r in rows if r[1] == "all"}
    final, last, base = overall["final ranking"], overall[next(iter(MECHANISMS))], overall[BASELINE]
    print(
        f"\nrecall@5: final {final:.3f}, last wave {last:.3f} ({final - last:+.3f}), "
        f"BM25 baseline {base:.3f} ({final - base:+.3f})"
    )
    print(
        f"context retrieval fired for {sum(fired)} of {len(fired)} questions "
        f"({sum(fired) / len(fired):.1%}); its top 5 recall@5 {overall[CONTEXT]:.3f} "
        f"against search {final:.3f}"
    )
    for label, ranking in [("last wave", LAST_WAVE), ("final", FINAL)]:
        spent = sorted(timings[ranking])
        print(
            f"{label} ranking, in-process search: p50 {spent[len(spent) // 2]:.1f} ms, "
            f"p95 {spent[int(0.95 * (len(spent) - 1))]:.1f} ms over {len(spent)} questions "
            "(limit 10; the same run, so under the same machine load)"
        )
    _lifecycle()
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


def _turns(conversation: dict) -> list[tuple[str, str, datetime]]:
    """(turn id, text, session time) of every turn, in order."""
    turns = []
    n = 1
    while f"session_{n}" in conversation:
        when = datetime.strptime(
            conversation[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y"
        ).replace(tzinfo=UTC)
        for turn in conversation[f"session_{n}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append((turn["dia_id"], text, when))
        n += 1
    return turns


def _baseline(turns: list[tuple[str, str, datetime]]) -> Callable[[str], list[str]]:
    bm25 = BM25Okapi([WORD.findall(text.lower()) for _, text, _ in turns])
    ids = [turn_id for turn_id, _, _ in turns]

    def rank(question: str) -> list[str]:
        scores = bm25.get_scores(WORD.findall(question.lower()))
        order = sorted(range(len(ids)), key=lambda i: -scores[i])
        return [ids[i] for i in order[: max(KS)]]

    return rank


def turn_observations(
    scope_id: str, turns: list[tuple[str, str, datetime]], **extra: Any
) -> list[Observation]:
    """One observation per conversation turn, keeping its session and turn id."""
    return [
        Observation(
            scope_id=scope_id,
            agent_id=AGENT,
            content=text,
            observed_at=when,
            created_at=when,
            source_session_id=turn_id.split(":")[0],  # "D3:5": turn 5 of session 3
            source_message_ids=[turn_id],
            related_user_ids=[USER],
            **extra,
        )
        for turn_id, text, when in turns
    ]


def _load(store: MemoryStore, turns: list[tuple[str, str, datetime]]) -> None:
    store.ensure_indexes()
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, USER))
    observations = turn_observations(scope.id, turns)
    for start in range(0, len(observations), 25):
        batch = observations[start : start + 25]
        append_in_transaction(
            store=store, scope_id=scope.id, observations=batch, now=batch[0].created_at
        )


def _ours(
    store: MemoryStore, ranking: Ranking, timings: list[float] | None = None
) -> Callable[[str], list[str]]:
    def rank(question: str) -> list[str]:
        started = time.perf_counter()
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=question,
            limit=max(KS),
            record_access=False,
            ranking=ranking,
        )
        if timings is not None:
            timings.append((time.perf_counter() - started) * 1000)
        return [h.observation.source_message_ids[0] for h in hits]

    return rank


def _context(store: MemoryStore, fired: list[bool]) -> Callable[[str], list[str]]:
    """What `POST /context` retrieves for the question (nothing when it does not fire)."""

    def rank(question: str) -> list[str]:
        result = context_assemble(store=store, agent_id=AGENT, user_id=USER, message=question)
        fired.append(result.decision.triggered)
        return [h.observation.source_message_ids[0] for h in result.hits]

    return rank


def _row(
    name: str,
    category: int | None,
    chosen: list[int],
    questions: list[dict],
    ranked: dict[int, list[str]],
) -> list[object]:
    def recall(i: int, k: int) -> float:
        evidence = set(questions[i]["evidence"])
        return len(evidence & set(ranked[i][:k])) / len(evidence) if evidence else 0.0

    def hit(i: int, k: int) -> float:
        return 1.0 if set(questions[i]["evidence"]) & set(ranked[i][:k]) else 0.0

    label = "all" if category is None else f"{category} {CATEGORIES[category]}"
    return [
        name,
        label,
        len(chosen),
        *(f"{fmean(recall(i, k) for i in chosen):.3f}" for k in KS),
        f"{fmean(hit(i, 5) for i in chosen):.3f}",
    ]


# -- lifecycle stages (issue 31) --------------------------------------------------------

NO_LIFECYCLE = replace(FINAL, feedback=False, access=False, recency=False, mmr=False)
LIFECYCLE: dict[str, Ranking] = {
    "final without lifecycle stages": NO_LIFECYCLE,
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


def _lifecycle() -> None:
    """Each lifecycle stage alone and together, on every dev conversation.

    Retrieval counts and feedback need usage, which the dataset does not have: the even
    questions play it (each is searched, its top 5 count as retrieved, and the agent
    says of each whether it was evidence: useful, or not), then every ranker is measured
    on the odd questions only, so no question is helped by its own feedback.
    """
    rows: list[list[object]] = []
    with embedded_server() as server:
        client = MongoClient(server.uri, tz_aware=True)
        for path in DEV:
            conversation = json.loads(path.read_text())
            turns = _turns(conversation)
            questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
            held_out = list(range(1, len(questions), 2))
            store = MemoryStore(client, f"bench_lifecycle_{path.stem.replace('-', '_')}")
            _load(store, turns)
            for name, ranking in LIFECYCLE.items():
                ranker = _ours(store, ranking)
                ranked = {i: ranker(questions[i]["question"]) for i in held_out}
                rows.append(_row(f"{path.stem}: {name}", None, held_out, questions, ranked))
            _usage(store, [questions[i] for i in range(0, len(questions), 2)])
            for name, ranking in AFTER_FEEDBACK.items():
                ranker = _ours(store, ranking)
                ranked = {i: ranker(questions[i]["question"]) for i in held_out}
                rows.append(_row(f"{path.stem}: {name}", None, held_out, questions, ranked))
            client.drop_database(store.db.name)
        client.close()
    print_table(
        "Lifecycle ranking stages on the dev conversations (odd questions; the even ones "
        "gave the retrievals and feedback)",
        ["ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"],
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
        client = MongoClient(server.uri, tz_aware=True)
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
        client.drop_database(store.db.name)
        client.close()
    print_table(
        f"Lifecycle ranking stages among distractors (odd questions; seeded in {seeded:.0f} s)",
        ["ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"],
        rows,
    )


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
