"""Item limits and models per scope: the code defaults and the ranges a setting may take.

A formation's extraction answer may file at most `item_cap` observations in a scope, each
of at most `item_words` words: shorter for a person's own memory, longer for shared ones
(the seeds' 25 / 30 / 35 words by type). The cap grows with the conversation: a short
chat has little worth keeping, a long one more, up to the ceiling (the seeds'
`calculate_dynamic_limits`). Each setting resolves code < agent (its default for the
scope type) < scope, the way prompts do (`streams.memory.scope_limits`).
"""

from __future__ import annotations

import math
from typing import Literal

SCOPE_KINDS = ("individual", "group", "collective", "shard")
ScopeKind = Literal["individual", "group", "collective", "shard"]

# Words per observation, by scope kind: a person's own memory holds short facts; a
# shared memory says a little more (who, which team, since when).
DEFAULT_ITEM_WORDS: dict[str, int] = {"individual": 25, "group": 30, "collective": 35, "shard": 35}
ITEM_WORDS_RANGE = (5, 200)
# The ceiling of observations per scope and formation, whatever the conversation's length.
DEFAULT_ITEM_CAP = 20
ITEM_CAP_RANGE = (1, 100)
# The cap grows by this many observations per started ~1,000 conversation tokens.
ITEMS_PER_1K_TOKENS = 5
TOKENS_PER_STEP = 1000

LIMIT_FIELDS = ("item_words", "item_cap")
SCOPE_MODEL_FIELDS = ("consolidation_model", "propagation_model")
AGENT_MODEL_FIELDS = ("extraction_model",)
# What an agent may set as its default for a scope type (PATCH /agents/{id} `scope_defaults`).
KIND_DEFAULT_FIELDS = (*LIMIT_FIELDS, *SCOPE_MODEL_FIELDS)
MAX_MODEL_NAME = 100

LimitSource = Literal["code", "agent", "scope"]


def code_default(field: str, kind: str) -> int:
    """The code's value of a limit for a scope kind."""
    if field == "item_words":
        return DEFAULT_ITEM_WORDS[kind]
    if field == "item_cap":
        return DEFAULT_ITEM_CAP
    raise KeyError(field)


def item_cap_for_tokens(*, ceiling: int, tokens: float) -> int:
    """The cap for a conversation of `tokens`: 5 per started 1,000 tokens, at most `ceiling`.

    A 300-token chat may file 5 observations in a scope, a 2,500-token one 15; never more
    than the ceiling, and never fewer than one step (or the ceiling, when it is lower).
    """
    steps = max(1, math.ceil(max(tokens, 0.0) / TOKENS_PER_STEP))
    return max(1, min(ceiling, steps * ITEMS_PER_1K_TOKENS))


def limit_range(field: str) -> tuple[int, int]:
    return ITEM_WORDS_RANGE if field == "item_words" else ITEM_CAP_RANGE


__all__ = [
    "AGENT_MODEL_FIELDS",
    "DEFAULT_ITEM_CAP",
    "DEFAULT_ITEM_WORDS",
    "ITEMS_PER_1K_TOKENS",
    "ITEM_CAP_RANGE",
    "ITEM_WORDS_RANGE",
    "KIND_DEFAULT_FIELDS",
    "LIMIT_FIELDS",
    "MAX_MODEL_NAME",
    "SCOPE_KINDS",
    "SCOPE_MODEL_FIELDS",
    "LimitSource",
    "ScopeKind",
    "code_default",
    "item_cap_for_tokens",
    "limit_range",
]
