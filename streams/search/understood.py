"""Search with query understanding around it (`streams.search.query_understanding`): multi-hop
decomposition (each part searched too, the lists interleaved) and RM3
pseudo-relevance feedback (a second pass with the best hits' terms). Each pass is the
plain search (`streams.search.index.search_in_scopes`) with these switches off, so every hit
keeps its explanation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from streams.core.documents import Scope
from streams.search.query_understanding import decompose, expansion_terms, interleave
from streams.search.ranking import QUESTION_FORM_WORDS, Ranking, query_parse
from streams.search.text import term_counts
from streams.store import MemoryStore

QUESTION_FORM_STEMS = frozenset(t for w in QUESTION_FORM_WORDS for t in term_counts(w))
PART_DEPTH = 1  # a part's list is as deep as the whole query's


def understood_search(
    *,
    store: MemoryStore,
    scopes: list[Scope],
    query: str,
    limit: int,
    ranking: Ranking,
    search_in_scopes: Callable[..., list[Any]],
    now: datetime | None = None,
    **options: Any,
) -> list[Any]:
    """`search_in_scopes` with `ranking.multihop` and `ranking.prf` (same arguments). The
    plain search is handed in by its caller (`streams.search.index`), which imports this
    module: no cycle between the two."""
    plain = replace(ranking, multihop=False, prf=False)

    def one(text: str, depth: int) -> list[Any]:
        if not ranking.prf:
            return search_in_scopes(
                store=store, scopes=scopes, query=text, limit=depth, ranking=plain, now=now,
                **options,
            )  # fmt: skip
        first = search_in_scopes(
            store=store,
            scopes=scopes,
            query=text,
            limit=max(depth, ranking.prf_docs),
            ranking=plain,
            now=now,
            **options,
        )
        parsed = query_parse(text, ranking=plain, now=now)
        expand = expansion_terms(
            [(h.observation.content, h.score) for h in first[: ranking.prf_docs]],
            query=parsed.terms,
            count=ranking.prf_terms,
            weight=ranking.prf_weight,
        )
        if not expand:
            return first[:depth]
        return search_in_scopes(
            store=store, scopes=scopes, query=text, limit=depth, ranking=plain, now=now,
            expand=expand, **options,
        )  # fmt: skip

    if not ranking.multihop:
        return one(query, limit)
    parsed = query_parse(query, ranking=plain, now=now)
    parts = decompose(query, names=parsed.names, ignore=QUESTION_FORM_STEMS)
    whole = one(query, limit)
    if not parts:
        return whole
    lists = [whole] + [one(part, PART_DEPTH * limit) for part in parts]
    by_id = {h.observation.id: h for hits in reversed(lists) for h in hits}
    order = interleave([[h.observation.id for h in hits] for hits in lists])
    return [by_id[key] for key in order[:limit]]
