"""The semantic layer's settings: on only when `MEMORY_EMBEDDING_MODEL` is set and the LLM
provider can embed (the offline provider cannot: text search alone then)."""

from __future__ import annotations

from django.conf import settings

from memory_admin.llm import get_llm_provider
from streams.embeddings import SemanticRanker


def semantic_ranker() -> SemanticRanker | None:
    model = settings.MEMORY_EMBEDDING_MODEL
    if not model:
        return None
    provider = get_llm_provider()
    if not hasattr(provider, "embed"):
        return None
    return SemanticRanker(provider=provider, model=model)  # type: ignore[arg-type]
