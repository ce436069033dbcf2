"""`search_scale` with embeddings: conv-26 among 0, 10K and 100K distractors (or
`--sizes`), text only against fused (local MiniLM, the default fusion), recall@5 and
latency with the query's embedding included; then exact nearest-neighbour search alone
against an HNSW index (hnswlib, when installed) as the scope grows: the crossover.

Needs the `local-embeddings` extra. Distractors are seeded as `search_scale` seeds them
(bulk, the same word salad). Their vectors: the conversation's turns and the first
`REAL` distractors are embedded for real; every further distractor takes the vector of
one of those real ones plus small noise (renormalised). Embedding 100,000 texts would
take ~15 minutes on this machine; the latency is that of the full matrix either way,
and recall among distractors near real ones is, if anything, harder than among random
vectors.
"""

from __future__ import annotations

import json
import time
from statistics import fmean
from typing import Any

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_table
from benchmarks.locomo import AGENT, CATEGORIES, DATA, USER, _turns
from benchmarks.search_scale import BATCH, SIZES, seeded_observations
from memory_admin.runtime.heap import freeze_startup_heap
from streams.search.embeddings import SemanticRanker
from streams.search.index import search_index_build, search_observations
from streams.search.local_embeddings import LOCAL_MODEL, LocalEmbedder, local_available
from streams.search.vectors import ScopeVectors, builds_in_progress, forget_cached
from streams.store import MemoryStore
from streams.store.embeddings import encode_vector

REAL = 2000  # distractors embedded for real
NOISE = 0.05
BUILD_WAIT = 900.0  # seconds to wait for a background HNSW build before timing it
CROSSOVER_SIZES = [10_000, 100_000, 300_000, 1_000_000]


HEADERS = [
    "N distractors",
    "seed s",
    "first search ms (loads vectors)",
    "text recall@5",
    "text p50 ms",
    "text p95 ms",
    "fused recall@5",
    "fused p50 ms",
    "fused p95 ms",
]


def run(sizes: list[int] | None = None) -> None:
    if not local_available():
        print("search_scale_semantic: the local-embeddings extra is not installed; nothing run")
        return
    import numpy as np

    conversation = json.loads(DATA.read_text())
    turns = _turns(conversation)
    questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
    embedder = LocalEmbedder(threads=1)
    ranker = SemanticRanker(embedder, LOCAL_MODEL)
    rows = []
    with embedded_server() as server:
        for n in sizes or SIZES:
            client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
            store = MemoryStore(client, f"bench_scale_sem_{n}")
            started = time.perf_counter()
            _seed(store, turns, n, embedder, np)
            seeded = time.perf_counter() - started
            size_rows = _size_rows(store, questions, ranker, [f"{n:,}", f"{seeded:.0f}"])
            rows += size_rows
            print(size_rows, flush=True)
            client.drop_database(store.name)
            forget_cached(store.name)
            client.close()
    print_table(
        f"Search at scale with embeddings: conv-26 ({len(turns)} turns, {len(questions)} "
        "questions) among N distractors, in-process, embedded store, limit 10; fused = local "
        "MiniLM, the default fusion, query embedding included (1 torch thread)",
        HEADERS,
        rows,
    )
    print(flush=True)
    crossover(np)


def _size_rows(
    store: MemoryStore, questions: list[dict], ranker: SemanticRanker, sized: list[str]
) -> list[list[object]]:
    """One size's row (`sized`: N and the seed seconds), and one more for the HNSW index
    when the first search started building it."""
    started = time.perf_counter()
    search_observations(  # the process's first search loads the scope's vectors
        store=store, agent_id=AGENT, user_id=USER, query="warm up", semantic=ranker
    )
    cold = (time.perf_counter() - started) * 1000
    freeze_startup_heap()  # as a web worker does once loaded (`memory_admin.wsgi`)
    text_recall, text_ms = _ask(store, questions, None)
    fused_recall, fused_ms = _ask(store, questions, ranker)
    rows: list[list[object]] = [
        [
            *sized,
            f"{cold:.0f}",
            f"{text_recall:.3f}",
            _p(text_ms, 50),
            _p(text_ms, 95),
            f"{fused_recall:.3f}",
            _p(fused_ms, 50),
            _p(fused_ms, 95),
        ]
    ]
    # Past HNSW_FROM vectors the first search starts an HNSW build in the background and
    # exact search serves meanwhile: time the built index too.
    started = time.perf_counter()
    while builds_in_progress() and time.perf_counter() - started < BUILD_WAIT:
        time.sleep(0.5)
    built = time.perf_counter() - started
    if built > 0.5:
        built_recall, built_ms = _ask(store, questions, ranker)
        rows.append(
            [
                f"{sized[0]}, HNSW built ({built:.0f} s after)",
                *[""] * 5,
                f"{built_recall:.3f}",
                _p(built_ms, 50),
                _p(built_ms, 95),
            ]
        )
    return rows


def _p(values: list[float], q: int) -> str:
    ordered = sorted(values)
    return f"{ordered[int(q / 100 * (len(ordered) - 1))]:.1f}"


def _ask(
    store: MemoryStore, questions: list[dict], ranker: SemanticRanker | None
) -> tuple[float, list[float]]:
    spent, recalls = [], []
    for q in questions:
        started = time.perf_counter()
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=q["question"],
            limit=10,
            record_access=False,
            semantic=ranker,
        )
        spent.append((time.perf_counter() - started) * 1000)
        top = {h.observation.source_message_ids[0] for h in hits[:5]}
        evidence = set(q["evidence"])
        recalls.append(len(evidence & top) / len(evidence) if evidence else 0.0)
    return fmean(recalls), spent


def _seed(store: MemoryStore, turns: list, n: int, embedder: LocalEmbedder, np) -> None:
    """As `search_scale._seed`, each document stored with its vector."""
    scope, observations = seeded_observations(store, turns, n)
    real = len(turns) + min(n, REAL)
    vectors = np.asarray(embedder.embed([o.content for o in observations[:real]]), np.float32)
    noise = np.random.default_rng(n)
    for start in range(0, len(observations), BATCH):
        docs = []
        for i, o in enumerate(observations[start : start + BATCH], start=start):
            if i < real:
                v = vectors[i]
            else:
                v = vectors[len(turns) + noise.integers(0, real - len(turns))]
                v = v + noise.normal(0, NOISE, v.shape).astype(np.float32)
                v /= np.linalg.norm(v)
            doc = o.to_mongo()
            doc.update(
                embedding=encode_vector(v.tolist()),
                embedding_model=LOCAL_MODEL,
                embedding_seq=ObjectId(),
            )
            docs.append(doc)
        store.seeding.insert_many("observations", docs, ordered=False)
    search_index_build(store=store, observations=observations)
    store.seeding.update_one(
        "scopes",
        {"_id": ObjectId(scope.id)},
        {"$set": {"observation_seq": len(observations), "observation_count": len(observations)}},
    )


def crossover(np) -> None:
    """Exact search (`ScopeVectors.nearest`) against hnswlib, 384 dimensions, top 30."""
    try:
        import hnswlib
    except ImportError:
        hnswlib = None
    import streams.search.vectors

    streams.search.vectors.HNSW_FROM = 10**12  # the exact rows stay exact
    rng = np.random.default_rng(0)
    rows = []
    for n in CROSSOVER_SIZES:
        matrix = rng.standard_normal((n, 384), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors = ScopeVectors()
        vectors.matrix = matrix
        vectors.ids = [ObjectId() for _ in range(n)]
        queries = rng.standard_normal((50, 384), dtype=np.float32)
        exact = []
        for q in queries:
            started = time.perf_counter()
            vectors.nearest(q.tolist(), 30)
            exact.append((time.perf_counter() - started) * 1000)
        row = [f"{n:,}", f"{matrix.nbytes / 2**20:.0f}", _p(exact, 50), _p(exact, 95)]
        if hnswlib is not None and n <= 300_000:
            index = hnswlib.Index(space="ip", dim=384)
            started = time.perf_counter()
            index.init_index(max_elements=n, ef_construction=100, M=16)
            index.add_items(matrix, num_threads=1)
            built = time.perf_counter() - started
            index.set_ef(64)
            approx = []
            for q in queries:
                started = time.perf_counter()
                index.knn_query(q, k=30)
                approx.append((time.perf_counter() - started) * 1000)
            row += [f"{built:.0f}", _p(approx, 50), _p(approx, 95)]
        else:
            row += ["-", "-", "-"]
        rows.append(row)
        print(row, flush=True)
    print_table(
        "Nearest 30 among N vectors (384 dims, float32, 1 core): exact in chunks against "
        "HNSW (hnswlib 0.8.0, M 16, ef 64; '-': not installed or not built, too slow here)",
        [
            "N",
            "matrix MiB",
            "exact p50 ms",
            "exact p95 ms",
            "hnsw build s",
            "hnsw p50 ms",
            "hnsw p95 ms",
        ],
        rows,
    )
