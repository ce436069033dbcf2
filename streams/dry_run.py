"""Dry runs of a prompt an operator is editing: the same context a real run builds, one
LLM call, and nothing stored (no version, no job, no observation moves)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from bson import ObjectId

from streams.consolidation_runs import describe_scope
from streams.documents import Scope
from streams.exceptions import InvalidInput
from streams.llm.port import (
    ConsolidationContext,
    ConversationLine,
    DatedObservation,
    ExtractionContext,
    LLMError,
    LLMProvider,
    LLMRequest,
    ShardGuidance,
)
from streams.prompts import render_consolidation, render_extraction, validate_template
from streams.store import MemoryStore

MAX_SHARDS = 50
MAX_DRY_RUN_OBSERVATIONS = 200
MAX_CONVERSATION_LINES = 200
ROLES = ("user", "assistant", "tool", "system")


@dataclass(frozen=True)
class DryRunResult:
    prompt: str
    text: str | None = None
    model: str | None = None
    duration_ms: int = 0
    error: str | None = None
    items: list[dict[str, str]] = field(default_factory=list)  # extraction: parsed observations


def dry_run_consolidation(
    *, store: MemoryStore, llm: LLMProvider, scope: Scope, template: str
) -> DryRunResult:
    """What a consolidation run with `template` would write now from the scope's pending
    observations (at most the oldest 200); InvalidInput when nothing is pending."""
    template = validate_template("consolidation", template)
    pending = scope.pending_observation_ids[:MAX_DRY_RUN_OBSERVATIONS]
    observations = store.observations.get_many([ObjectId(i) for i in pending])
    live = sorted((o for o in observations if not o.deleted), key=lambda o: o.observed_at)
    if not live:
        raise InvalidInput(
            "the scope has no pending observations to dry-run on", details=[{"field": "scope"}]
        )
    context = ConsolidationContext(
        scope_description=describe_scope(scope),
        current=scope.consolidation,
        observations=[DatedObservation(o.content, o.observed_at) for o in live],
        max_words=scope.consolidation_max_words,
    )
    prompt = render_consolidation(template, context)
    request = LLMRequest(
        task="consolidation", prompt=prompt, context=context, json_output=False, tier="slow"
    )
    return _call(llm, request)


def dry_run_extraction(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    agent_id: str,
    template: str,
    conversation: str,
    user_name: str,
    individual: Scope | None = None,
) -> DryRunResult:
    """What one extraction with `template` would return for a pasted conversation
    ("role: text" per line; a line without a known role continues the one before)."""
    template = validate_template("extraction", template)
    lines = parse_conversation(conversation, user_name=user_name)
    shards = store.scopes.active_shards(agent_id, limit=MAX_SHARDS)
    consolidations = (
        {"individual": individual.consolidation} if individual and individual.consolidation else {}
    )
    context = ExtractionContext(
        lines=lines,
        user_name=user_name,
        group_names=[],
        shards=[
            ShardGuidance(name=s.name or "", guidance=s.extraction_prompt or "") for s in shards
        ],
        consolidations=consolidations,
    )
    prompt = render_extraction(template, context)
    request = LLMRequest(
        task="extraction", prompt=prompt, context=context, json_output=True, tier="fast"
    )
    result = _call(llm, request)
    if result.text is None:
        return result
    return DryRunResult(
        prompt=result.prompt,
        text=result.text,
        model=result.model,
        duration_ms=result.duration_ms,
        error=result.error,
        items=_extraction_items(result.text),
    )


def parse_conversation(text: str, *, user_name: str) -> list[ConversationLine]:
    lines: list[ConversationLine] = []
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw:
            continue
        role, _, content = raw.partition(":")
        role = role.strip().lower()
        if role in ROLES and content.strip():
            speaker = user_name if role == "user" else role
            lines.append(ConversationLine(role=role, speaker=speaker, content=content.strip()))
        elif lines:
            last = lines[-1]
            lines[-1] = ConversationLine(last.role, last.speaker, f"{last.content}\n{raw}")
        else:
            lines.append(ConversationLine(role="user", speaker=user_name, content=raw))
    if not lines:
        raise InvalidInput(
            'paste a conversation: one message per line, like "user: ..."',
            details=[{"field": "conversation"}],
        )
    if len(lines) > MAX_CONVERSATION_LINES:
        raise InvalidInput(
            f"at most {MAX_CONVERSATION_LINES} messages per dry run",
            details=[{"field": "conversation"}],
        )
    return lines


def _call(llm: LLMProvider, request: LLMRequest) -> DryRunResult:
    try:
        answer = llm.complete(request)
    except LLMError as exc:
        return DryRunResult(prompt=request.prompt, error=f"The LLM call failed: {exc}")
    return DryRunResult(
        prompt=request.prompt,
        text=answer.text.strip(),
        model=answer.model,
        duration_ms=answer.duration_ms,
    )


def _extraction_items(text: str) -> list[dict[str, str]]:
    try:
        answer = json.loads(text)
    except ValueError:
        return []
    raw = answer.get("observations") if isinstance(answer, dict) else None
    if not isinstance(raw, list):
        return []
    return [
        {"content": str(item.get("content", "")), "scope": str(item.get("scope", ""))}
        for item in raw
        if isinstance(item, dict)
    ]
