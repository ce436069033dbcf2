"""The optional semantic layer: observation embeddings computed in the background, and a
reranking of text-search candidates fused by reciprocal rank fusion (RRF).

Never on the ingest path: `embeddings_compute` walks new observations by time windows of
their `_id` (a periodic task), so a slow or failing embedding provider delays vectors,
never a write. At query time one embedding call ranks the text search's candidate pool
by cosine similarity; a failing call falls back to the text ranking. Without a vector
index on every deployment, the semantic layer reorders candidates, it does not add any.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from bson import ObjectId

from streams.documents import Observation, utcnow
from streams.llm.port import LLMError
from streams.store import MemoryStore

logger = logging.getLogger("streams.embeddings")
RRF_K = 60
RERANK_POOL = 50  # text candidates the semantic ranking reorders
WINDOW = timedelta(hours=1)
LAG = timedelta(minutes=2)  # an open transaction's observations are not skipped
BACKFILL = timedelta(days=7)  # where a first run starts
MAX_WINDOW = timedelta(days=1)
BATCH = 64


class Embedder(Protocol):
    def embed(self, texts: list[str], model: str) -> list[list[float]]: ...


@dataclass(frozen=True)
class SemanticRanker:
    provider: Embedder
    model: str


def embeddings_compute(
    *,
    store: MemoryStore,
    provider: Embedder,
    model: str,
    now: datetime | None = None,
    max_calls: int = 20,
) -> int:
    """Embed the observations created since the last run (deleted ones skipped); the count.

    The cursor moves only past windows fully done, so an error leaves the rest for the
    next run; at most `max_calls` embedding calls per run.
    """
    now = now or utcnow()
    until = now - LAG
    at = store.embeddings.cursor() or now - BACKFILL
    embedded = calls = 0
    window = WINDOW
    while at < until and calls < max_calls:
        end = min(at + window, until)
        after = ObjectId.from_datetime(at)
        seen = 0
        while calls < max_calls:
            docs = store.embeddings.window(
                after=after, before=ObjectId.from_datetime(end), limit=BATCH
            )
            seen += len(docs)
            todo = [
                d for d in docs if d.get("deleted_at") is None and d.get("embedding_model") != model
            ]
            if todo:
                vectors = provider.embed([d["content"] for d in todo], model)
                calls += 1
                store.embeddings.save(
                    {d["_id"]: v for d, v in zip(todo, vectors, strict=True)}, model=model
                )
                embedded += len(todo)
            if len(docs) < BATCH:
                break
            after = docs[-1]["_id"]
        else:
            break  # out of calls inside this window: it is done next run
        store.embeddings.advance(end)
        at = end
        # Quiet stretches are crossed in growing steps; a busy one goes back to small ones.
        window = WINDOW if seen else min(window * 2, MAX_WINDOW)
    return embedded


def semantic_rerank(
    *,
    store: MemoryStore,
    ranker: SemanticRanker,
    query: str,
    candidates: list[ObjectId],
) -> list[tuple[Observation, float]] | None:
    """The candidates (text order) fused with their cosine order by RRF, best first, with
    the fused score; None when the query cannot be embedded (the caller keeps text order)."""
    try:
        [query_vector] = ranker.provider.embed([query], ranker.model)
    except (LLMError, ValueError):
        logger.warning("query embedding failed; text ranking only", exc_info=True)
        return None
    found = store.embeddings.with_vectors(candidates, model=ranker.model)
    similarity = {
        o.id: _cosine(query_vector, v) for o, v in found if v and len(v) == len(query_vector)
    }
    semantic_rank = {
        oid: rank for rank, oid in enumerate(sorted(similarity, key=lambda i: -similarity[i]))
    }
    fused = []
    for text_rank, (observation, _) in enumerate(found):
        score = 1 / (RRF_K + text_rank + 1)
        if observation.id in semantic_rank:
            score += 1 / (RRF_K + semantic_rank[observation.id] + 1)
        fused.append((observation, score))
    return sorted(fused, key=lambda pair: -pair[1])


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
