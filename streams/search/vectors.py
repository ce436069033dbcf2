"""Semantic candidates: the nearest observations to a query's embedding, per scope, and
their fusion with the text index's candidates before the later ranking stages.

Vectors live on the observation documents (`streams.store.embeddings`). A search must
not read a scope's vectors from the store each time (a scope of 100,000 holds 150 MB of
them), so each process keeps a matrix per (database, scope, model), refreshed on
every search by one indexed read of the vectors saved since it last looked
(`embedding_seq`, an ObjectId taken when a vector is saved; from a few seconds before
the last read, so a vector committed late is not missed). Nearest neighbours are
exact (a float32 matrix product in chunks) up to `HNSW_FROM` vectors in a scope, then
approximate (HNSW, hnswlib) once its index is built in the background; measured in
`benchmarks.search_scale_semantic`. A deleted or edited observation's stale vector
is harmless: every candidate is fetched and checked before it is ranked.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from bson import ObjectId

from streams.search.ranking import Candidate
from streams.store import MemoryStore
from streams.store.embeddings import SETTLE


class _NumpyOnFirstUse:
    """numpy, imported when a vector is first touched: it is 0.4 s of every process's
    start (`python -X importtime manage.py help`), and most processes never rank."""

    def __getattr__(self, name: str) -> object:
        import numpy

        globals()["np"] = numpy
        return getattr(numpy, name)


# numpy comes with the local-embeddings extra (and most deployments); Any: it may be absent,
# and it is the module itself after its first use.
np: Any = _NumpyOnFirstUse() if importlib.util.find_spec("numpy") else None
try:  # an approximate index for large scopes, in the local-embeddings extra
    import hnswlib
except ImportError:
    hnswlib = None

logger = logging.getLogger("streams.vectors")
CHUNK = 16_384  # rows per matrix product: bounded temporary memory at any scope size
# Exact search reads the whole matrix per query: on this project's loaded 2-core machine
# 24 ms at 10,000 vectors and ~125 ms at 100,000 (memory bound; HNSW: under 1 ms at
# both, `benchmarks.search_scale_semantic`). Past this many vectors in one scope, HNSW
# (hnswlib, in the extra) takes over once built in the background.
HNSW_FROM = 20_000
HNSW_EF = 64
RRF_K = 60

Method = Literal["rrf", "weighted", "late"]


@dataclass(frozen=True)
class Fusion:
    """How the text and the embedding candidates become one pool.

    `depth`: how many of each list are fused (the text index's best `depth` by term
    score, the embeddings' `depth` nearest). `rrf`: reciprocal rank fusion, each list
    counts 1/(k + rank), scaled so the best of both scores as the best text match (the
    later stages add shares of that score). `weighted`: the text score plus `weight`
    times the best text score times the cosine, min-max normalised over the nearest.
    `late`: the embeddings' candidates join the pool with their own text score, every
    stage runs, then RRF of the final text ranking's top `depth` and the nearest `depth`
    (what fusing two top-10 lists did in the issue's side run); the rest follow in text
    order."""

    # Measured on the three dev conversations (`benchmarks.retrieval_semantic`): no fusion
    # of MiniLM's candidates beat text alone on recall@5 (0.635 mean); the weighted sum at
    # 0.3 over the 30 nearest came closest (0.624) and raised recall@1 (0.410 against
    # 0.385); RRF before the stages cost 4 to 7 points (it throws the text scores away),
    # RRF after them 3.
    method: Method = "weighted"
    depth: int = 30
    weight: float = 0.3
    k: int = RRF_K


class ScopeVectors:
    """One scope's vectors for one model, in memory: ids, and a unit-norm float32 matrix
    (grown by doubling, so a new vector does not copy the scope's). Past `HNSW_FROM`
    vectors, with hnswlib installed, an HNSW index is built in the background and then
    serves the queries (exact search meanwhile)."""

    def __init__(self) -> None:
        self.ids: list[ObjectId] = []
        self.row: dict[ObjectId, int] = {}
        self._buffer: Any = None  # np.ndarray (capacity, d)
        # Every vector saved before this was read (a vector commits within SETTLE of
        # being saved): the next refresh reads from here.
        self.safe: datetime | None = None
        self.lock = threading.Lock()
        self.hnsw: Any = None  # hnswlib.Index over rows [0, hnsw_rows), once built
        self.hnsw_rows = 0
        self.dirty: set[int] = set()  # rows replaced since the index took them
        self.building = False

    @property
    def matrix(self):  # np.ndarray (n, d) | None
        return None if self._buffer is None else self._buffer[: len(self.ids)]

    @matrix.setter
    def matrix(self, value) -> None:  # benchmarks set a whole matrix
        self._buffer = value

    def add(self, rows: list[tuple[ObjectId, bytes]]) -> None:
        """Vectors (raw float32) saved since the last refresh; an id seen before is
        replaced (re-embedded after an edit)."""
        if not rows:
            return
        width = len(rows[0][1]) // 4
        if self._buffer is not None and width != self._buffer.shape[1]:
            return  # another dimension under the same model name: not comparable
        block = np.frombuffer(b"".join(raw for _, raw in rows), dtype=np.float32)
        block = block.reshape(len(rows), width).copy()
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        block /= np.where(norms == 0, 1, norms)
        for i, (oid, _) in enumerate(rows):
            at = self.row.get(oid)
            if at is None:
                at = self.row[oid] = len(self.ids)
                self._grow(at + 1, width)
                self.ids.append(oid)
            else:
                self.dirty.add(at)
            self._buffer[at] = block[i]

    def _grow(self, rows: int, width: int) -> None:
        if self._buffer is None:
            self._buffer = np.zeros((max(rows, 1024), width), dtype=np.float32)
        elif rows > self._buffer.shape[0]:
            bigger = np.zeros((max(rows, 2 * self._buffer.shape[0]), width), dtype=np.float32)
            bigger[: len(self.ids)] = self._buffer[: len(self.ids)]
            self._buffer = bigger

    def nearest(self, query: list[float], k: int) -> list[tuple[ObjectId, float]]:
        """The `k` rows most similar to `query` (cosine), best first."""
        matrix = self.matrix
        if matrix is None or not len(self.ids):
            return []
        q = _unit(np.asarray(query, dtype=np.float32))
        if q.shape[0] != matrix.shape[1]:
            return []
        if self.hnsw is not None:
            return self._approximate(q, k)
        if hnswlib is not None and len(self.ids) >= HNSW_FROM and not self.building:
            self._build_later()
        best_ids: list[int] = []
        best_scores: list[float] = []
        for start in range(0, len(self.ids), CHUNK):
            scores = matrix[start : start + CHUNK] @ q
            take = min(k, len(scores))
            top = np.argpartition(-scores, take - 1)[:take]
            best_ids.extend((top + start).tolist())
            best_scores.extend(scores[top].tolist())
        order = sorted(range(len(best_ids)), key=lambda i: -best_scores[i])[:k]
        return [(self.ids[best_ids[i]], float(best_scores[i])) for i in order]

    def _approximate(self, q, k: int) -> list[tuple[ObjectId, float]]:
        n = len(self.ids)
        fresh = sorted(self.dirty | set(range(self.hnsw_rows, n)))
        if fresh:
            if n > self.hnsw.get_max_elements():
                self.hnsw.resize_index(max(n, 2 * self.hnsw.get_max_elements()))
            self.hnsw.add_items(self._buffer[fresh], fresh, num_threads=1)
            self.hnsw_rows, self.dirty = n, set()
        labels, distances = self.hnsw.knn_query(q, k=min(k, n), num_threads=1)
        return [
            (self.ids[int(label)], 1.0 - float(distance))
            for label, distance in zip(labels[0], distances[0], strict=True)
        ]

    def _build_later(self) -> None:
        """Build the HNSW index over a copy of the rows in a background thread; it takes
        over once built (the rows added or replaced meanwhile are added on first use)."""
        self.building = True
        rows = len(self.ids)
        snapshot = self._buffer[:rows].copy()
        self.dirty = set()

        def build() -> None:
            try:
                index = hnswlib.Index(space="ip", dim=snapshot.shape[1])
                index.init_index(max_elements=2 * rows, ef_construction=100, M=16)
                index.add_items(snapshot, np.arange(rows), num_threads=1)
                index.set_ef(HNSW_EF)
            except Exception:  # exact search goes on
                logger.warning("HNSW build failed; exact search", exc_info=True)
                return
            with self.lock:
                self.hnsw, self.hnsw_rows = index, rows

        threading.Thread(target=build, name="hnsw-build", daemon=True).start()


_CACHE: dict[tuple[str, str, str], ScopeVectors] = {}
_CACHE_LOCK = threading.Lock()


def builds_in_progress() -> int:
    """HNSW indexes this process is building in the background (a benchmark waits for
    them to time the steady state apart from the build)."""
    with _CACHE_LOCK:
        return sum(1 for v in _CACHE.values() if v.building and v.hnsw is None)


def scope_vectors(database: str, scope_id: ObjectId, model: str) -> ScopeVectors:
    key = (database, str(scope_id), model)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is None:
            found = _CACHE[key] = ScopeVectors()
        return found


def forget_cached(database: str | None = None) -> None:
    """Drop the in-memory vectors (a database dropped, tests and benchmarks)."""
    with _CACHE_LOCK:
        for key in [k for k in _CACHE if database is None or k[0] == database]:
            del _CACHE[key]


def available() -> bool:
    return np is not None


def nearest_in_scopes(
    *,
    store: MemoryStore,
    scope_ids: list[ObjectId],
    model: str,
    query: list[float],
    k: int,
) -> list[tuple[ObjectId, float]]:
    """The `k` observations nearest to `query` over the scopes, best first (cosine): each
    scope's vectors brought up to date (one indexed read of those saved since), then
    searched in memory."""
    if np is None or k <= 0:
        return []
    found: list[tuple[ObjectId, float]] = []
    for scope_id in scope_ids:
        vectors = scope_vectors(store.name, scope_id, model)
        with vectors.lock:
            started = datetime.now(UTC)
            vectors.add(store.embeddings.saved_since(scope_id, model=model, since=vectors.safe))
            safe = started - SETTLE
            if vectors.safe is None or safe > vectors.safe:
                vectors.safe = safe
            found += vectors.nearest(query, k)
    return sorted(found, key=lambda pair: -pair[1])[:k]


def _unit(vector):  # np.ndarray -> np.ndarray
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


# -- fusion ------------------------------------------------------------------------------


def fused_scores(
    text: list[tuple[ObjectId, float]],
    nearest: list[tuple[ObjectId, float]],
    fusion: Fusion,
) -> dict[ObjectId, float]:
    """Each candidate's fused score from its place in the text list (best first, with its
    text score) and in the nearest list (best first, with its cosine); in the units of
    the text score, so the later stages' shares and boosts keep their meaning."""
    text = text[: fusion.depth]
    nearest = nearest[: fusion.depth]
    top = max((s for _, s in text), default=0.0) or 1.0
    fused: dict[ObjectId, float] = {}
    if fusion.method == "rrf":
        scale = top * (fusion.k + 1) / 2  # the best of both lists scores `top`
        for rank, (oid, _) in enumerate(text, start=1):
            fused[oid] = fused.get(oid, 0.0) + scale / (fusion.k + rank)
        for rank, (oid, _) in enumerate(nearest, start=1):
            fused[oid] = fused.get(oid, 0.0) + scale / (fusion.k + rank)
        return fused
    fused = {oid: score for oid, score in text}
    if nearest:
        high, low = nearest[0][1], nearest[-1][1]
        span = (high - low) or 1.0
        for oid, cosine in nearest:
            fused[oid] = fused.get(oid, 0.0) + fusion.weight * top * (cosine - low) / span
    return fused


def late_fusion(
    ranked: list[tuple[Candidate, float]],
    nearest: list[tuple[ObjectId, float]],
    fusion: Fusion,
) -> list[tuple[Candidate, float]]:
    """The final text ranking (best first) fused by RRF with the nearest list: each
    candidate's `semantic` mechanism makes up the difference. Candidates in neither top
    `depth` keep their text order below every fused one."""
    text = [(c.observation_id, score) for c, score in ranked]
    fused = fused_scores(text, nearest, replace(fusion, method="rrf"))
    top = max((s for _, s in text[: fusion.depth]), default=0.0) or 1.0
    floor = top * (fusion.k + 1) / 2 / (fusion.k + fusion.depth + 1)
    out = []
    for candidate, score in ranked:
        new = fused.get(candidate.observation_id)
        if new is None:
            new = floor * max(0.0, min(score / top, 1.0)) * 0.5
        candidate.mechanisms["semantic"] = new - score
        out.append((candidate, new))
    return sorted(out, key=lambda pair: (-pair[1], -_id_key(pair[0])))


def _id_key(candidate: Candidate) -> int:
    return int.from_bytes(candidate.observation_id.binary, "big")


def fusion_stage(
    *,
    candidates: dict[ObjectId, Candidate],
    text: list[tuple[ObjectId, float]],
    nearest: list[tuple[ObjectId, float]],
    fusion: Fusion,
) -> None:
    """The fused score becomes each fetched candidate's score: its `semantic` mechanism is
    the difference from what it scored before (negative when RRF rates it lower). A
    candidate in neither fused list scores 0 (a session neighbour may still lift it)."""
    fused = fused_scores(text, nearest, fusion)
    for oid, candidate in candidates.items():
        candidate.mechanisms["semantic"] = fused.get(oid, 0.0) - candidate.score
