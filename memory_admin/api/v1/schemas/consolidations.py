"""Consolidation versions and their pages."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema

from memory_admin.api.v1.schemas.common import InSchema, Time


class FidelityOut(Schema):
    unstated_observation_ids: list[str]
    dropped_sentences: list[str]


class CoverageOut(Schema):
    question: str
    answer: str | None = Field(
        description="As the consolidation call answered it; null when not stated, lost or unknown"
    )
    status: Literal["answered", "unanswered", "lost", "unknown"] = Field(
        description="lost: the previous version answered it; unknown: the answer's "
        "ANSWERS: trailer was malformed (nothing is guessed)"
    )


class ConsolidationVersionOut(Schema):
    version: int
    text: str
    trigger: str
    actor: str | None
    absorbed_observation_ids: list[str]
    prompt_version: int | None
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int
    restored_from: int | None
    warning: str | None
    redacted: bool
    created_at: Time
    # What the text no longer states: {"unstated_observation_ids", "dropped_sentences"}
    # (empty lists for versions written before it was recorded).
    fidelity: FidelityOut
    # The scope's questions as this version answers them ([] when none were set).
    coverage: list[CoverageOut] = Field(default_factory=list)
    loses_answer: bool = Field(False, description="true: a question this version no longer answers")

    @staticmethod
    def resolve_loses_answer(obj: Any) -> bool:
        return any(c.get("status") == "lost" for c in getattr(obj, "coverage", None) or [])

    @staticmethod
    def resolve_fidelity(obj: Any) -> dict[str, list[str]]:
        found = getattr(obj, "fidelity", None) or {}
        return {
            "unstated_observation_ids": list(found.get("unstated_observation_ids") or []),
            "dropped_sentences": list(found.get("dropped_sentences") or []),
        }


class ConsolidationPageOut(Schema):
    items: list[ConsolidationVersionOut]
    next_cursor: str | None


# -- questions memory must answer ----------------------------------------------------------


class QuestionsIn(InSchema):
    questions: list[Any] | None = Field(
        ...,
        description="At most 5 questions, each 1 to 200 characters; null removes the "
        "default (scopes of this kind then ask none unless they set their own).",
    )


class QuestionsOut(Schema):
    scope_kind: Literal["individual", "group", "collective", "shard"]
    questions: list[str]
    version: int = Field(description="0: never saved")
    author: str | None = None
    created_at: Time | None = None


class ConsolidationEstimateOut(Schema):
    """What "Consolidate now" would cost, estimated from the prompts' length (no call)."""

    pending: int = Field(description="Observations waiting in the scope")
    folded: int = Field(description="Those a fold reads (private and expired ones are not)")
    chunks: int = Field(description="Calls in turn, each folding into the text the last left")
    chunk_tokens: int = Field(description="Prompt tokens per call at most")
    prompt_tokens: int = Field(description="Estimated prompt tokens of every chunk, summed")
    max_completion_tokens: int = Field(description="At most: every call's max_tokens, summed")
    model: str
    cost_usd: float | None = Field(
        description="Prompt tokens plus at most max_completion_tokens, at the price table "
        "the Usage pages use; null when the model has no price"
    )


class ConsolidateOut(Schema):
    job_id: str
    estimate: ConsolidationEstimateOut = Field(
        description="The estimate of the run just queued, read before it was queued"
    )
