"""The semantic layer's settings: which embedding provider, if any.

`MEMORY_EMBEDDINGS`: `auto` (default) takes the OpenAI-compatible API when
`MEMORY_EMBEDDING_MODEL` is set and the LLM provider can embed, else the local model
when the `local-embeddings` extra is installed, else none (text search alone: the light
default); `api`, `local` and `off` choose one.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings

from memory_admin.llm import get_llm_provider
from streams.embeddings import SemanticRanker
from streams.local_embeddings import LOCAL_MODEL, local_available, local_embedder
from streams.vectors import available as vectors_available


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
    if choice in ("auto", "local") and _local_installed():
        embedder = local_embedder()
        embedder.threads = settings.MEMORY_EMBEDDING_THREADS
        return SemanticRanker(provider=embedder, model=LOCAL_MODEL)
    return None


@cache
def _local_installed() -> bool:
    return local_available()
