"""Prompt checks for consolidation and propagation (issue 38, item 3), beside extraction's.

A consolidation check's input is a few observations (one per line); its expectations: the
memory `keeps` a text, `not_contains` a text (never states it), `answers` a question (the
call's `ANSWERS:` trailer answers it), is `within_words` N words. A propagation check's
input is a few absorbed observations; its expectations: `nothing_personal` (no copy holds
an email, phone, IBAN or card, nor the given text) and `lands_in` a target ("collective",
"group:<name>"). Each runs one request built by `streams.memory.requests`, exactly as a
run of that kind would send it, with the draft or the prompt in effect.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from streams.core.documents import Scope
from streams.drafts.dry_run import DryRunResult
from streams.guard.detectors import detect
from streams.llm.answers_trailer import answers_split
from streams.llm.contradiction_answer import answer_split
from streams.llm.json_answer import read_json_answer
from streams.llm.port import (
    ConsolidationContext,
    DatedObservation,
    LLMError,
    LLMProvider,
    PropagationContext,
)
from streams.memory.consolidation import word_count
from streams.memory.consolidation_runs import describe_scope
from streams.memory.requests import consolidation_request, propagation_request
from streams.prompts import Draft, resolve_template
from streams.store import MemoryStore

# A check (`streams.drafts.prompt_checks.PromptCheck`: kind, agent_id, conversation,
# expectations), typed loosely here so the two modules do not import each other.
PromptCheck = Any

EXPECTATIONS_BY_KIND: dict[str, dict[str, str]] = {
    "extraction": {
        "lands_in": "an observation lands in",
        "contains": "some observation contains",
        "not_contains": "no observation contains",
        "nothing": "nothing is extracted",
    },
    "consolidation": {
        "keeps": "the memory keeps",
        "not_contains": "the memory never states",
        "answers": "the memory answers",
        "within_words": "the memory has at most this many words:",
    },
    "propagation": {
        "nothing_personal": "no copy is personal (nor holds)",
        "lands_in": "a copy lands in",
    },
}
VALUE_OPTIONAL = {"nothing", "nothing_personal"}
CHECK_KINDS = tuple(EXPECTATIONS_BY_KIND)
DEFAULT_WORDS = 500
_LINE = re.compile(r"^\s*(?:[-*•]\s*)?(.+?)\s*$")


def input_lines(text: str) -> list[str]:
    """A consolidation or propagation check's observations: one per non-empty line."""
    return [m[1] for line in text.splitlines() if line.strip() and (m := _LINE.match(line))]


def run_kind(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    check: PromptCheck,
    draft: Draft | None,
    level: Scope | None,
) -> tuple[DryRunResult, list[str]]:
    """The dry run of a consolidation or propagation check and the expectations it fails."""
    kind = check.kind
    template = resolve_template(
        store=store, agent_id=check.agent_id, kind=kind, scope=level, draft=draft
    )
    lines = input_lines(check.conversation)
    if kind == "consolidation":
        return _consolidation(llm, check, template, lines, level)
    return _propagation(llm, check, template, lines, level)


def _consolidation(
    llm: LLMProvider, check: PromptCheck, template: Any, lines: list[str], level: Scope | None
) -> tuple[DryRunResult, list[str]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    questions = [e.value for e in check.expectations if e.type == "answers"]
    observations = [
        DatedObservation(text, start + timedelta(days=i), f"{i + 1:024x}")
        for i, text in enumerate(lines)
    ]
    context = ConsolidationContext(
        scope_description=describe_scope(level) if level else "memory the checks run in",
        current=None,
        observations=observations,
        max_words=level.consolidation_max_words if level else DEFAULT_WORDS,
        questions=questions,
    )
    request = consolidation_request(template=template.text, context=context)
    try:
        answer = llm.complete(request)
    except LLMError as exc:
        return DryRunResult(prompt=request.prompt, part=template, error=str(exc)), [str(exc)]
    read = answers_split(answer.text, len(questions))
    memory, _pairs = answer_split(read.memory, [o.id or "" for o in observations])
    answered = dict(zip(questions, read.answers or [None] * len(questions), strict=True))
    failures = []
    for e in check.expectations:
        if (
            e.type == "keeps"
            and e.value.lower() not in memory.lower()
            or e.type == "not_contains"
            and e.value.lower() in memory.lower()
        ):
            failures.append(e.describe())
        elif e.type == "answers" and not answered.get(e.value):
            why = f" ({read.error})" if read.error else ""
            failures.append(e.describe() + why)
        elif e.type == "within_words" and word_count(memory) > int(e.value):
            failures.append(f"{e.describe()} (it has {word_count(memory)})")
    result = DryRunResult(
        prompt=request.prompt, part=template, text=memory, model=answer.model, requests=[request]
    )
    return result, failures


def _propagation(
    llm: LLMProvider, check: PromptCheck, template: Any, lines: list[str], level: Scope | None
) -> tuple[DryRunResult, list[str]]:
    wanted = [e.value for e in check.expectations if e.type == "lands_in"]
    targets = list(dict.fromkeys([*wanted, "collective"]))
    source = describe_scope(level) if level else "memory of a group"
    context = PropagationContext(observations=lines, targets=targets, source_description=source)
    request = propagation_request(template=template.text, context=context)
    try:
        answer = llm.complete(request)
        found = read_json_answer(answer.text, what="propagation").value.get("observations") or []
    except LLMError as exc:
        return DryRunResult(prompt=request.prompt, part=template, error=str(exc)), [str(exc)]
    items = [
        {"content": str(i.get("content", "")), "scope": str(i.get("scope", ""))}
        for i in found
        if isinstance(i, dict)
    ]
    failures = [e.describe() for e in check.expectations if not _propagation_met(e, items)]
    result = DryRunResult(
        prompt=request.prompt, part=template, items=items, model=answer.model, requests=[request]
    )
    return result, failures


def _personal(content: str, value: str) -> bool:
    """A copy that holds a personal detail, or the check's own text."""
    if any(flag.startswith("pii") for flag in detect(content).flags):
        return True
    return bool(value) and value.lower() in content.lower()


def _propagation_met(expectation: Any, items: list[dict[str, str]]) -> bool:
    value = expectation.value
    if expectation.type == "lands_in":
        return any(i["scope"].lower() == value.lower() for i in items)
    return not any(_personal(i["content"], value) for i in items)  # nothing_personal
