"""The optional semantic layer: observation embeddings computed in the background, and
the query's embedding, whose nearest observations join the text index's candidates
(`streams.search.vectors`, fused before the later ranking stages).

Never on the ingest path: `embeddings_compute` walks new observations by time windows of
their `_id`, run by the jobs that write observations once their work is done, by a
periodic task (adds made by a request), and by `manage.py embed_observations` (backfill),
so a slow or failing embedding provider delays vectors, never a write. At query time one
embedding call; a failing call falls back to the text ranking.

Two providers behind the `Embedder` port: the OpenAI-compatible embeddings API
(`MEMORY_EMBEDDING_MODEL`) and a local model shipped in a package
(`streams.search.local_embeddings`, the `local-embeddings` extra).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from bson import ObjectId

from streams.core.documents import utcnow
from streams.llm.port import LLMError
from streams.search.vectors import Fusion
from streams.store import MemoryStore

logger = logging.getLogger("streams.embeddings")
WINDOW = timedelta(hours=1)
LAG = timedelta(minutes=2)  # an open transaction's observations are not skipped
BACKFILL = timedelta(days=7)  # where a first run starts
MAX_WINDOW = timedelta(days=1)
BATCH = 64
JOB_MARGIN = timedelta(seconds=1)  # a job's first write may share its start's second


class Embedder(Protocol):
    def embed(self, texts: list[str], model: str) -> list[list[float]]: ...


@dataclass(frozen=True)
class SemanticRanker:
    """An embedding provider and model, and how its candidates fuse with the text's."""

    provider: Embedder
    model: str
    fusion: Fusion = field(default_factory=Fusion)


def query_vector(ranker: SemanticRanker, query: str) -> list[float] | None:
    """The query's embedding; None when the provider fails (search stays lexical)."""
    try:
        [vector] = ranker.provider.embed([query], ranker.model)
    except (LLMError, ValueError, OSError):
        logger.warning("query embedding failed; text ranking only", exc_info=True)
        return None
    return vector


def _embed(store: MemoryStore, provider: Embedder, model: str, docs: list[dict[str, Any]]) -> int:
    """One embedding call for the documents' texts, the vectors saved; how many."""
    vectors = provider.embed([d["content"] for d in docs], model)
    store.embeddings.save({d["_id"]: v for d, v in zip(docs, vectors, strict=True)}, model=model)
    return len(docs)


def _embed_stale(
    *, store: MemoryStore, provider: Embedder, model: str, max_calls: int
) -> tuple[int, int]:
    """Embed again what was edited since it was embedded (the walk's cursor is past it;
    deleted ones are unmarked); how many, in how many calls."""
    embedded = calls = 0
    while calls < max_calls:
        found = store.embeddings.stale(limit=BATCH)
        store.embeddings.unmark_stale([d["_id"] for d in found if d.get("deleted_at")])
        stale = [d for d in found if d.get("deleted_at") is None]
        if not stale:
            if found:
                continue
            break
        embedded += _embed(store, provider, model, stale)
        calls += 1
    return embedded, calls


def embeddings_compute(
    *,
    store: MemoryStore,
    provider: Embedder,
    model: str,
    now: datetime | None = None,
    max_calls: int = 20,
    start: datetime | None = None,
    until: datetime | None = None,
) -> int:
    """Embed the observations created since the last run (deleted ones skipped); the count.

    The cursor moves only past windows fully done, so an error leaves the rest for the
    next run; at most `max_calls` embedding calls per run. A backfill passes `start`
    (the oldest observation's time): it walks from there and leaves the cursor alone; a
    job that wrote observations passes its start and `until` now (its writes committed).
    """
    now = now or utcnow()
    until = until or now - LAG
    remember = start is None
    embedded, calls = _embed_stale(store=store, provider=provider, model=model, max_calls=max_calls)
    at = start or store.embeddings.cursor() or now - BACKFILL
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
                embedded += _embed(store, provider, model, todo)
                calls += 1
            if len(docs) < BATCH:
                break
            after = docs[-1]["_id"]
        else:
            break  # out of calls inside this window: it is done next run
        if remember:
            store.embeddings.advance(end)
        at = end
        # Quiet stretches are crossed in growing steps; a busy one goes back to small ones.
        window = WINDOW if seen else min(window * 2, MAX_WINDOW)
    return embedded


def embeddings_after_job(
    *, store: MemoryStore, ranker: SemanticRanker, started: datetime, now: datetime | None = None
) -> int:
    """What a job wrote (every observation created since it started), embedded by the job
    itself once its work is done: its transactions are committed, so nothing is skipped.
    A failure is logged and left to the periodic walk: the job's work stands."""
    try:
        return embeddings_compute(
            store=store,
            provider=ranker.provider,
            model=ranker.model,
            start=started - JOB_MARGIN,
            until=(now or utcnow()) + JOB_MARGIN,  # `_id` ranges go by whole seconds
            max_calls=100,
        )
    except (LLMError, ValueError, OSError):
        logger.warning("embedding a job's observations failed; the periodic walk retries")
        return 0


def embeddings_backfill(*, store: MemoryStore, ranker: SemanticRanker) -> int:
    """Every observation stored without a vector for the ranker's model, oldest first (the
    `embed_observations` command); resumable and idempotent: embedded ones are skipped."""
    oldest = store.embeddings.oldest()
    if oldest is None:
        return 0
    return embeddings_compute(
        store=store,
        provider=ranker.provider,
        model=ranker.model,
        start=oldest - JOB_MARGIN,
        until=utcnow() + JOB_MARGIN,  # the periodic walk catches one committed later
        max_calls=10**9,
    )
