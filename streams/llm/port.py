"""The port between the domain and any LLM provider.

Each request carries the rendered prompt (what an OpenAI-compatible model
reads) and the structured context it was rendered from (what the offline,
rule-based provider works on). Both providers answer text: JSON for extraction
and propagation, prose for consolidation. The domain parses and validates the
answer the same way whichever provider gave it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

LLMTask = Literal["extraction", "consolidation", "propagation", "prompt_suggestion"]
ModelTier = Literal["fast", "slow"]


@dataclass(frozen=True)
class ConversationLine:
    role: str  # user | assistant | tool | system
    speaker: str  # the user's display name, or the role for non-user lines
    content: str
    created_at: datetime | None = None
    user_id: str | None = None  # who spoke a user line: the prompt shows "name (id)"
    # The caller's id of the message: the prompt shows the line as "[<message id>] ..." and
    # the answer cites its sources by it.
    message_id: str | None = None


@dataclass(frozen=True)
class ShardGuidance:
    name: str
    guidance: str


@dataclass(frozen=True)
class ExtractionContext:
    lines: list[ConversationLine]
    user_name: str
    group_names: list[str]
    shards: list[ShardGuidance]
    consolidations: dict[str, str]  # scope label ("individual", "group:Eden Team", ...) -> text
    max_observations: int = 5
    max_words: int = 50
    # Guidance saved on a group (by group name) or on the collective scope: placed in that
    # scope's section of the one extraction prompt (`streams.prompts.resolver`).
    group_guidance: dict[str, str] = field(default_factory=dict)
    collective_guidance: str = ""
    # Paused scopes, by label ("group:Eden", "individual:u-9"): the model is told to record
    # nothing for them (anything it still files there is dropped and counted).
    paused: list[str] = field(default_factory=list)
    # Per target label as the prompt lists it ("individual:u-1", "group:Eden", ...): the
    # most observations it may take and the most words each (`streams.core.scope_limits`);
    # a label not listed takes `max_observations` / `max_words`.
    target_limits: dict[str, tuple[int, int]] = field(default_factory=dict)

    def limits_for(self, label: str) -> tuple[int, int]:
        """(cap, words) of a target label, compared without case."""
        wanted = label.strip().lower()
        for name, limits in self.target_limits.items():
            if name.lower() == wanted:
                return limits
        return self.max_observations, self.max_words


@dataclass(frozen=True)
class DatedObservation:
    content: str
    observed_at: datetime
    id: str = ""  # shown to the model, which names it to report a contradiction


@dataclass(frozen=True)
class ConsolidationContext:
    scope_description: str  # e.g. "individual memory of Gene", "group Eden Team"
    current: str | None
    observations: list[DatedObservation]  # oldest first
    max_words: int
    # Questions the memory must answer (`streams.prompts.questions`): the answer's trailer.
    questions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PropagationContext:
    observations: list[str]
    targets: list[str]  # group names, or ["collective"]
    source_description: str
    # Open collective candidates (id, text) a copy may support instead of repeating.
    candidates: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class CorrectionExample:
    """One support correction shown to the model that suggests a prompt change."""

    what: str  # edit | delete | private | move | reject
    before: str | None
    after: str | None
    reason: str | None
    target: str | None  # a move's target label
    lines: list[str]  # the source lines, "speaker: text"


@dataclass(frozen=True)
class SuggestionContext:
    """A prompt and the corrections of what it made: the metaprompt's input."""

    kind: str  # the prompt kind: extraction | propagation (| consolidation)
    template: str
    examples: list[CorrectionExample]


LLMContext = ExtractionContext | ConsolidationContext | PropagationContext | SuggestionContext


@dataclass(frozen=True)
class LLMRequest:
    """Everything a model call asks for, built once per task (`streams.memory.requests`)
    and sent as is: the dry run and the real run send equal values, and a retry asks for
    the same thing (the same sampling and limits)."""

    task: LLMTask
    prompt: str
    context: LLMContext
    json_output: bool
    tier: ModelTier
    # The JSON schema the answer must follow (`response_format: json_schema`, strict), its
    # labels and ids limited to what the prompt lists; None for a prose answer.
    schema: dict[str, Any] | None = None
    temperature: float = 0.0  # 0: a retried call reproduces the answer that was lost
    max_tokens: int | None = None  # sized per task from its word limits
    # The model an agent or scope setting names (`streams.memory.scope_limits`); None: the
    # provider's model for the tier.
    model: str | None = None


@dataclass(frozen=True)
class LLMResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: int = 0
    extra: dict[str, object] = field(default_factory=dict)


def log_llm_call(task: LLMTask, result: LLMResult) -> None:
    """One INFO line per call, whichever provider answered: latency and tokens, for cost."""
    logging.getLogger("streams.llm").info(
        "llm %s model=%s prompt_tokens=%d completion_tokens=%d duration_ms=%d",
        task,
        result.model,
        result.prompt_tokens,
        result.completion_tokens,
        result.duration_ms,
    )


class LLMError(Exception):
    """The provider failed (HTTP error, timeout, refused): the run is retried later."""


class LLMProvider(Protocol):
    name: str  # "openai" | "offline"

    def complete(self, request: LLMRequest) -> LLMResult: ...
