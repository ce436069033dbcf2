"""What "Consolidate now" would cost, shown before it runs: chunks × prompt tokens of
the scope's pending set (`streams.memory.consolidation_chunks`), priced by the table the
Usage pages use (`MEMORY_LLM_PRICES`). Estimated from the prompt's length, never a call."""

from __future__ import annotations

from dataclasses import dataclass

from streams.core.documents import Scope
from streams.memory.consolidation_chunks import chunk_plan
from streams.memory.consolidation_runs import consolidation_inputs
from streams.records.usage import Prices, price_of
from streams.store import MemoryStore


@dataclass(frozen=True)
class ConsolidationEstimate:
    """What "Consolidate now" would cost, before it runs (estimated, not measured)."""

    pending: int
    folded: int  # those a fold reads: not private, expired, deleted or superseded
    chunks: int
    chunk_tokens: int
    prompt_tokens: int
    max_completion_tokens: int  # at most: every call's `max_tokens`
    model: str
    cost_usd: float | None  # prompt tokens plus at most that many out; None: unpriced

    def to_dict(self) -> dict[str, object]:
        return {
            "pending": self.pending,
            "folded": self.folded,
            "chunks": self.chunks,
            "chunk_tokens": self.chunk_tokens,
            "prompt_tokens": self.prompt_tokens,
            "max_completion_tokens": self.max_completion_tokens,
            "model": self.model,
            "cost_usd": self.cost_usd,
        }


def consolidation_estimate(
    *, store: MemoryStore, scope: Scope, chunk_tokens: int, model: str, prices: Prices
) -> ConsolidationEstimate:
    """Chunks × prompt tokens of the scope's pending set now, and its cost at `prices`
    (the table the Usage pages use). A run may call once more per chunk (a word-limit
    retry, a contradiction held for review): the estimate counts one call per chunk."""
    _live, folded = consolidation_inputs(store=store, scope=scope)
    plan = chunk_plan(store=store, scope=scope, observations=folded, budget=chunk_tokens)
    completion = plan.max_completion_tokens
    cost = price_of(prices, model, plan.prompt_tokens, completion)
    return ConsolidationEstimate(
        pending=len(scope.pending_observation_ids),
        folded=len(folded),
        chunks=len(plan.chunks),
        chunk_tokens=plan.budget,
        prompt_tokens=plan.prompt_tokens if plan.chunks else 0,
        max_completion_tokens=completion,
        model=model,
        cost_usd=None if cost is None else cost / 1_000_000,
    )
