"""Consolidation in chunks: a pending set beyond one prompt's budget folds in turns.

A large pending set (after a threshold raise, a restore or a legacy import) used to go
into one prompt, whatever its size: past the model's context window the call fails or
the model silently reads only part of it. Here the pending observations, oldest first,
are cut into chunks whose prompts each fit `MEMORY_CONSOLIDATION_CHUNK_TOKENS` (tokens
estimated at four characters a token, as the offline provider and the context page
count). The run folds chunk 1 into the current text, chunk 2 into chunk 1's result, and
so on, then commits ONE version absorbing every chunk's observations
(`streams.memory.consolidation_runs`).

Every prompt sends the template, the questions and the text so far besides its lines;
the text so far is reserved at the scope's word limit (or the current text, if longer),
so a chunk never outgrows the budget as the text grows. An observation longer than the
room left is a chunk of its own: nothing is ever skipped.

The same plan gives the estimate shown before "Consolidate now"
(`streams.memory.consolidation_estimate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from streams.core.documents import Observation, Scope
from streams.llm.contradiction_answer import MAX_PAIRS
from streams.llm.offline import estimate_tokens
from streams.llm.port import ConsolidationContext
from streams.memory.consolidation import RunDetails
from streams.memory.requests import PAIR_TOKENS, consolidation_request
from streams.prompts import Draft, resolve_template
from streams.prompts.questions import questions_in_effect
from streams.store import MemoryStore

# Prompt tokens per call: with the answer (about 1,100 tokens at 500 words) it fits the
# 8k context of the smallest local models; raise it for a large-context model (fewer
# chunks re-send the template and the text less often).
DEFAULT_CHUNK_TOKENS = 6000
MIN_CHUNK_TOKENS = 1000
# "- [2026-01-31] [<24 hex>] " and the newline: what a prompt line adds to its text.
LINE_OVERHEAD_CHARS = len("- [2026-01-31] [") + 24 + len("] ") + 1
# The text so far, reserved at the word limit: about six characters a word.
CHARS_PER_TOKEN = 4
TEXT_TOKENS_PER_WORD = 6 / CHARS_PER_TOKEN


@dataclass(frozen=True)
class ChunkPlan:
    """The chunks one run folds in turn, and what each of their prompts is estimated at."""

    chunks: list[list[Observation]]
    fixed_tokens: int  # template, questions, the text so far (reserved): sent every call
    line_tokens: list[int]  # the observation lines, per chunk
    budget: int
    max_completion_tokens: int  # every call's `max_tokens` (room for pairs too), summed

    @property
    def prompt_tokens(self) -> int:
        return self.fixed_tokens * len(self.chunks) + sum(self.line_tokens)


def line_tokens(observation: Observation) -> int:
    """An observation's line in the consolidation prompt, in estimated tokens."""
    return math.ceil((LINE_OVERHEAD_CHARS + len(observation.content)) / CHARS_PER_TOKEN)


def chunk_plan(
    *,
    store: MemoryStore,
    scope: Scope,
    observations: list[Observation],
    budget: int,
    draft: Draft | None = None,
) -> ChunkPlan:
    """`observations` (oldest first) cut, in order, into chunks whose prompts fit `budget`."""
    budget = max(budget, MIN_CHUNK_TOKENS)
    template = resolve_template(
        store=store, agent_id=scope.agent_id, kind="consolidation", scope=scope, draft=draft
    )
    bare = consolidation_request(
        template=template.text,
        context=ConsolidationContext(
            scope_description="",
            current=None,
            observations=[],
            max_words=scope.consolidation_max_words,
            questions=questions_in_effect(store=store, scope=scope).questions,
        ),
    )
    reserved = max(
        estimate_tokens(scope.consolidation or ""),
        math.ceil(scope.consolidation_max_words * TEXT_TOKENS_PER_WORD),
    )
    fixed = estimate_tokens(bare.prompt) + reserved + estimate_tokens(scope.label or "") + 16
    room = budget - fixed
    chunks: list[list[Observation]] = []
    sizes: list[int] = []
    for observation in observations:
        cost = line_tokens(observation)
        if not chunks or (sizes[-1] + cost > room and chunks[-1]):
            chunks.append([])
            sizes.append(0)
        chunks[-1].append(observation)
        sizes[-1] += cost
    return ChunkPlan(
        chunks=chunks,
        fixed_tokens=fixed,
        line_tokens=sizes,
        budget=budget,
        max_completion_tokens=sum(
            (bare.max_tokens or 0) + PAIR_TOKENS * min(MAX_PAIRS, len(chunk)) for chunk in chunks
        ),
    )


def chunks_merged(runs: list[RunDetails]) -> RunDetails:
    """One version's details from its chunks' folds: tokens and time summed, every pair
    reported, each warning once; the questions' answers are the last fold's, which
    describe the text committed."""
    if not runs:
        return RunDetails()
    warnings = [run.warning for run in runs if run.warning]
    return replace(
        runs[-1],
        prompt_tokens=sum(run.prompt_tokens for run in runs),
        completion_tokens=sum(run.completion_tokens for run in runs),
        duration_ms=sum(run.duration_ms for run in runs),
        warning="; ".join(dict.fromkeys(warnings)) or None,
        contradictions=tuple(pair for run in runs for pair in run.contradictions),
        contradictions_rejected=sum(run.contradictions_rejected for run in runs),
        chunks=len(runs),
    )
