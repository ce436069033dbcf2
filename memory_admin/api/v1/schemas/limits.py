"""Limits and models per scope: what agents and scopes take, and what is in effect."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import StrictInt, StringConstraints

from streams.core.scope_limits import ITEM_CAP_RANGE, ITEM_WORDS_RANGE, MAX_MODEL_NAME
from streams.memory.scope_limits import InEffect, ScopeLimits

ModelName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_MODEL_NAME)]
ItemWords = Annotated[StrictInt, Field(ge=ITEM_WORDS_RANGE[0], le=ITEM_WORDS_RANGE[1])]
ItemCap = Annotated[StrictInt, Field(ge=ITEM_CAP_RANGE[0], le=ITEM_CAP_RANGE[1])]
Source = Literal["code", "agent", "scope"]

ITEM_WORDS_HELP = (
    "Words per observation a formation may file in this scope (null: the agent's default "
    "for the scope type, else the code's: individual 25, group 30, collective and shards 35)."
)
ITEM_CAP_HELP = (
    "The ceiling of observations per formation in this scope: the cap is 5 per started "
    "1,000 conversation tokens, at most this (null: the agent's default, else 20)."
)
MODEL_HELP = (
    "A model of the price table (MEMORY_LLM_PRICES; another name is a 422 naming the field); "
    "null: the agent's default for the scope type, else MEMORY_LLM_MODEL_{tier}."
)


class InEffectOut(Schema):
    value: Any
    source: Source = Field(description="code < agent < scope: the level the value comes from")


class LimitsOut(Schema):
    item_words: InEffectOut
    item_cap: InEffectOut
    consolidation_model: InEffectOut
    propagation_model: InEffectOut


def in_effect_out(value: InEffect) -> dict[str, Any]:
    return {"value": value.value, "source": value.source}


def limits_out(limits: ScopeLimits) -> dict[str, Any]:
    return {
        name: in_effect_out(limits.get(name))
        for name in ("item_words", "item_cap", "consolidation_model", "propagation_model")
    }


__all__ = [
    "ITEM_CAP_HELP",
    "ITEM_WORDS_HELP",
    "MODEL_HELP",
    "InEffectOut",
    "ItemCap",
    "ItemWords",
    "LimitsOut",
    "ModelName",
    "in_effect_out",
    "limits_out",
]
