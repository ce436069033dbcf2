"""The offline provider: deterministic rules in place of a model, for demos and tests.

It reads the structured context of a request, never its prompt, so its answers do not
depend on how a prompt is worded or overridden. No network, no randomness: the same
request always gets the same answer, labelled with the model name "offline-rules" so
nobody mistakes it for a model's work. The answers have the shapes the domain parses
from a real model (JSON for extraction and propagation, prose for consolidation), so
the whole pipeline runs unchanged without an API key.

The rules live beside this module: `offline_extraction` (what is worth keeping and for
which scope), `offline_consolidation` (merge, de-duplicate, newer wins, word limit).
Propagation is here: see `propagate`.
"""

from __future__ import annotations

import json
import math
import re
import time

from streams.llm.answers_trailer import answers_trailer, offline_answers
from streams.llm.contradiction_answer import answer_trailer, deterministic_pairs
from streams.llm.offline_consolidation import consolidate
from streams.llm.offline_extraction import extract_observations
from streams.llm.offline_suggestion import suggest
from streams.llm.offline_text import capitalise, clean, close_sentence, normalise
from streams.llm.port import (
    ConsolidationContext,
    ExtractionContext,
    LLMError,
    LLMRequest,
    LLMResult,
    PropagationContext,
    SuggestionContext,
    log_llm_call,
)

OFFLINE_MODEL = "offline-rules"

_I = re.IGNORECASE
# Personal information never propagates: first/second person, preferences and requests,
# health, identity. Deliberately broad: a false drop only loses a copy. Contact details,
# account numbers and secrets are the propagation guard's (`streams.guard.detectors`), whatever
# the provider answers.
_PERSONAL_WORDS = re.compile(
    r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself|you|your|yours)\b"
    r"|\b(?:prefers?|preferred|likes|loves|hates|enjoys|dislikes|favou?rite|wants to be called"
    r"|call me|asks (?:not )?to|birthday|born|years old|lives|lived|address|salary|password"
    r"|passport|married|wife|husband|girlfriend|boyfriend|children|kids)\b",
    _I,
)
_HEALTH = re.compile(
    r"\b(?:health|sick|ill|illness|disease|diagnos\w*|allerg\w*|medication|medicine"
    r"|pregnan\w*|therapy|therapist|doctor|hospital|diabetes|depress\w*|anxiety|surgery"
    r"|disabilit\w*)\b",
    _I,
)
_IDENTITY = re.compile(
    r"\b(?:religio\w*|ethnic\w*|sexual\w*|gay|lesbian|transgender|political views?"
    r"|nationality)\b",
    _I,
)
_SHARED = re.compile(
    r"\b(?:team|teams|project|projects|we|we're|our|us|everyone|everybody|users|customers"
    r"|the product|company|release)\b",
    _I,
)
_ATTRIBUTION = re.compile(r"^[^:]{1,40}?\b(?:said|noted|mentioned):\s*", _I)
_NOT_NAMES = frozenset({"Individual", "Memory", "Group", "User", "Of", "The", "Scope"})


class OfflineProvider:
    """The `LLMProvider` used when no API key is configured; stateless and thread-safe."""

    name = "offline"

    def complete(self, request: LLMRequest) -> LLMResult:
        started = time.monotonic()
        context = request.context
        if request.task == "extraction" and isinstance(context, ExtractionContext):
            text = _json({"observations": extract_observations(context)})
        elif request.task == "consolidation" and isinstance(context, ConsolidationContext):
            # It reports what the deterministic check finds among the new observations.
            pairs = deterministic_pairs([(o.id, o.content) for o in context.observations])
            memory = consolidate(context)
            text = memory + answer_trailer(pairs)
            if context.questions:
                text += answers_trailer(offline_answers(memory, context.questions))
        elif request.task == "propagation" and isinstance(context, PropagationContext):
            text = _json({"observations": propagate(context)})
        elif request.task == "prompt_suggestion" and isinstance(context, SuggestionContext):
            text = suggest(context)
        else:
            raise LLMError(
                f"the offline provider cannot answer a {request.task} request "
                f"with a {type(context).__name__}"
            )
        result = LLMResult(
            text=text,
            model=OFFLINE_MODEL,
            prompt_tokens=estimate_tokens(request.prompt),
            completion_tokens=estimate_tokens(text),
            duration_ms=round((time.monotonic() - started) * 1000),
            extra={"offline": True},
        )
        log_llm_call(request.task, result)
        return result


def estimate_tokens(text: str) -> int:
    """About four characters per token, the usual rule of thumb for English."""
    return math.ceil(len(text) / 4)


def propagate(context: PropagationContext) -> list[dict[str, str]]:
    """Shared, impersonal observations, copied once to each target.

    An observation is copied when, after any "X said:" attribution is removed, it reads as
    a shared fact (it mentions a team, a project, "we", everyone, users, the product ...)
    and nothing personal (see `is_personal`).
    """
    names = person_names(context.source_description)
    targets = [target for target in context.targets if target]
    seen: set[str] = set()
    copies: list[dict[str, str]] = []
    for observation in context.observations:
        content = close_sentence(_ATTRIBUTION.sub("", clean(observation)))
        key = normalise(content)
        if not key or key in seen or is_personal(content, names) or not _SHARED.search(content):
            continue
        seen.add(key)
        content = capitalise(content)
        copies.extend({"content": content, "scope": scope} for scope in _scopes(content, targets))
    return copies


def _scopes(content: str, targets: list[str]) -> list[str]:
    """Every target, unless the text names some of them: then only those ("Eden Team uses
    Jira" is for Eden Team, not for the user's other groups)."""
    named = [
        target
        for target in targets
        if target != "collective" and _mentions(content, target.removeprefix("group:"))
    ]
    return [_target_scope(target) for target in (named or targets)]


def _mentions(text: str, name: str) -> bool:
    return bool(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, _I))


def is_personal(text: str, names: frozenset[str] = frozenset()) -> bool:
    """Whether the text carries anything about one person that must stay where it is."""
    if any(p.search(text) for p in (_PERSONAL_WORDS, _HEALTH, _IDENTITY)):
        return True
    return any(_mentions(text, name) for name in names)


def person_names(source_description: str) -> frozenset[str]:
    """Who an individual scope belongs to ("individual memory of Gene Hunt" gives "Gene Hunt",
    "Gene" and "Hunt"): an observation that names its person is about that person."""
    match = re.search(r"\bindividual\b.*?\bof\s+(.+?)\s*$", source_description, _I)
    if not match:
        return frozenset()
    whole = match[1].strip(" .'\"")
    parts = re.findall(r"\b[A-Z][\w'-]+", whole)
    return frozenset(name for name in [whole, *parts] if name and name not in _NOT_NAMES)


def _target_scope(target: str) -> str:
    """Targets are group names, or "collective"; a ready "group:<name>" label is kept."""
    if target == "collective":
        return "collective"
    return target if target.startswith("group:") else f"group:{target}"


def _json(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)


__all__ = ["OFFLINE_MODEL", "OfflineProvider", "estimate_tokens", "is_personal", "propagate"]
