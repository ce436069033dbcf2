"""The semantic layer's settings: which embedding provider, if any.

`MEMORY_EMBEDDINGS`: `auto` (default) takes the OpenAI-compatible API when
`MEMORY_EMBEDDING_MODEL` is set and the LLM provider can embed, else none (text search
alone: the light default); `api`, `local` and `off` choose one. The local model (the
`local-embeddings` extra) is never chosen by `auto`: fused with text it lowered held-out
recall@5 (0.624 against 0.635, docs/semantic-measurements.md), so it is an opt-in.
"""

from __future__ import annotations

import logging
import threading
from functools import cache

from django.conf import settings

from memory_admin.integrations.llm import get_llm_provider
from streams.search.embeddings import SemanticRanker
from streams.search.local_embeddings import LOCAL_MODEL, local_available, local_embedder
from streams.search.vectors import available as vectors_available


def semantic_ranker() -> SemanticRanker | None:
    choice = settings.MEMORY_EMBEDDINGS
    if choice == "off" or not vectors_available():
        return None
    model = settings.MEMORY_EMBEDDING_MODEL
    if choice in ("auto", "api") and model:
        provider = get_llm_provider()
        if hasattr(provider, "embed"):
            return SemanticRanker(provider=provider, model=model)  # type: ignore[arg-type]
        if choice == "api":
            return None
    if choice == "local" and _local_installed():
        embedder = local_embedder()
        embedder.threads = settings.MEMORY_EMBEDDING_THREADS
        return SemanticRanker(provider=embedder, model=LOCAL_MODEL)
    return None


def warm_up() -> None:
    """Load the local model in a background thread at start (7 to 26 s on a busy 2-core
    machine): otherwise the first search would wait for it."""
    ranker = semantic_ranker()
    if ranker is None or ranker.model != LOCAL_MODEL:
        return

    def load() -> None:
        try:
            ranker.provider.embed(["warm up"], ranker.model)
        except Exception:  # the first search tries again, and logs
            logging.getLogger("memory_admin.integrations.embeddings").warning(
                "local model warm-up failed"
            )

    threading.Thread(target=load, name="embedding-warm-up", daemon=True).start()


@cache
def _local_installed() -> bool:
    return local_available()
