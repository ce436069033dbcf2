"""Prompt templates: the placeholders each kind knows, validation, and rendering.

A template is a whole prompt in `str.format` syntax with named placeholders
only; literal braces (a JSON example) are doubled. Validation happens when an
operator saves a template, so a broken one is refused with a message that
names the problem, instead of failing a formation at three in the morning.
Rendering validates again, because a stored override may predate a change to
the placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from string import Formatter
from typing import cast

from streams.core.documents import PROMPT_KINDS, PromptKind
from streams.core.exceptions import InvalidInput
from streams.llm.port import (
    ConsolidationContext,
    ConversationLine,
    ExtractionContext,
    PropagationContext,
)

MAX_TEMPLATE_CHARS = 20_000
MAX_SHARD_GUIDANCE_CHARS = 2_000
MAX_GUIDANCE_CHARS = MAX_SHARD_GUIDANCE_CHARS

NO_CONSOLIDATIONS = "(none yet)"
NO_CONSOLIDATION = "(no consolidation yet)"
NO_GROUPS = "(the user is in no group)"
NO_SHARDS = "(no shards)"
NO_COLLECTIVE_GUIDANCE = "(no further guidance)"
NO_OBSERVATIONS = "(none)"
COLLECTIVE_TARGET = "collective"
PLACEHOLDER_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Placeholder:
    required: bool
    description: str


PLACEHOLDERS: dict[PromptKind, dict[str, Placeholder]] = {
    "extraction": {
        "conversation": Placeholder(
            True,
            'The conversation, oldest first, one "[<message id>] speaker: content" line each '
            "(the role in the brackets where a line has no id).",
        ),
        "user_name": Placeholder(False, "The current user's display name."),
        "groups": Placeholder(
            False, "The user's groups by name, one per line, each with its guidance if any."
        ),
        "collective": Placeholder(
            False, "The collective scope's guidance on what belongs in it, if any."
        ),
        "shards": Placeholder(
            False, "Each active shard's name and extraction guidance, as a sub-prompt section."
        ),
        "consolidations": Placeholder(
            False,
            "The current consolidation of each scope involved, by label "
            '("individual", "group:<name>", ...), or "(none yet)".',
        ),
        "max_observations": Placeholder(
            False, "The most observations to return in all (the largest cap of any place)."
        ),
        "max_words": Placeholder(
            False, "The most words per observation (the largest word limit of any place)."
        ),
        "limits": Placeholder(
            False,
            "Each place's cap and word limit, one \"- <scope label>: at most N observations, "
            'each at most W words" line each (a template without it gets them at the end).',
        ),
    },
    "consolidation": {
        "scope": Placeholder(False, 'Whose memory this is, e.g. "individual memory of Gene".'),
        "consolidation": Placeholder(
            True, 'The current consolidation text, or "(no consolidation yet)".'
        ),
        "observations": Placeholder(
            True, 'The new observations, oldest first, one "- [YYYY-MM-DD] content" line each.'
        ),
        "max_words": Placeholder(True, "The word limit of the consolidation."),
    },
    "propagation": {
        "observations": Placeholder(True, "The observations just absorbed, one per line."),
        "targets": Placeholder(
            True, 'The scopes they may go to: "group:<name>" lines, or "collective".'
        ),
        "source": Placeholder(False, 'Where they were absorbed, e.g. "individual memory of Gene".'),
        "candidates": Placeholder(
            False,
            'Open collective candidates, one "- [<id>] <text>" line each, or "(none)" '
            "(a template without it gets them after the targets).",
        ),
    },
}


def check_kind(kind: str) -> PromptKind:
    """The kind, or InvalidInput naming the kinds there are."""
    if kind not in PROMPT_KINDS:
        raise InvalidInput(
            f"unknown prompt kind {kind!r}: use one of {', '.join(PROMPT_KINDS)}",
            details=[{"field": "kind"}],
        )
    return kind  # narrowed by the test above


def template_fields(text: str) -> list[str]:
    """The placeholder names a template uses, in order; InvalidInput if it is not well formed.

    Only bare names are allowed: positional `{}`/`{0}`, attribute or index access,
    conversions and format specs would either fail at render time or let a template
    reach into the objects it is rendered from.
    """
    names: list[str] = []
    try:
        parsed = list(Formatter().parse(text))
    except ValueError as exc:
        raise _malformed(
            f"unbalanced braces ({exc}); write literal braces doubled, as {{{{ and }}}}"
        ) from exc
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if name == "" or name.isdigit():
            raise _malformed("positional placeholders ({} or {0}) are not allowed: name them")
        if not name.isidentifier():
            if "." in name or "[" in name:
                raise _malformed(f"{{{name}}}: placeholders take no attribute or index access")
            raise _malformed(
                f"{{{name}}} is not a placeholder name; "
                "write literal braces doubled, as {{ and }}"
            )
        if conversion or spec:
            raise _malformed(f"{{{name}}}: placeholders take no conversion or format spec")
        names.append(name)
    return names


def validate_template(kind: str, text: str) -> str:
    """The template, stripped, or InvalidInput saying which placeholder is missing or unknown."""
    known = PLACEHOLDERS[check_kind(kind)]
    text = (text or "").strip()
    if not text:
        raise InvalidInput("the template is empty", details=[{"field": "text"}])
    if len(text) > MAX_TEMPLATE_CHARS:
        raise InvalidInput(
            f"the template is longer than {MAX_TEMPLATE_CHARS} characters",
            details=[{"field": "text"}],
        )
    used = set(template_fields(text))
    missing = [name for name, p in known.items() if p.required and name not in used]
    unknown = sorted(used - known.keys())
    if missing or unknown:
        problems = []
        if missing:
            problems.append("it lacks " + ", ".join(f"{{{n}}}" for n in missing))
        if unknown:
            problems.append("it names unknown " + ", ".join(f"{{{n}}}" for n in unknown))
        allowed = ", ".join(f"{{{n}}}" for n in known)
        raise InvalidInput(
            f"the {kind} template is refused: {' and '.join(problems)} (it may use {allowed})",
            details=[{"field": "text", "missing": missing, "unknown": unknown}],
        )
    return text


def validate_shard_guidance(text: str | None, *, field: str = "extraction_prompt") -> str:
    """A shard's extraction guidance: a shard exists for its guidance, so it may not be empty."""
    text = (text or "").strip()
    if not text:
        raise InvalidInput(
            "a shard needs extraction guidance: say what belongs in it",
            details=[{"field": field}],
        )
    return validate_guidance(text, field=field)


def validate_guidance(text: str | None, *, field: str = "extraction_prompt") -> str:
    """Guidance for one scope's section of the extraction prompt, stripped.

    Guidance is not a template: braces in it are literal and it is placed, as written,
    under the scope's name. So it is refused when it is empty, too long to sit beside
    the other sections, or uses a placeholder (which would never be filled: it is a
    sign the operator pasted a whole template where guidance belongs).
    """
    text = (text or "").strip()
    if not text:
        raise InvalidInput(
            "the guidance is empty: say what belongs in this scope", details=[{"field": field}]
        )
    if len(text) > MAX_GUIDANCE_CHARS:
        raise InvalidInput(
            f"guidance is longer than {MAX_GUIDANCE_CHARS} characters",
            details=[{"field": field}],
        )
    placeholders = sorted(set(PLACEHOLDER_NAME.findall(text)) & PLACEHOLDERS["extraction"].keys())
    if placeholders:
        named = ", ".join(f"{{{n}}}" for n in placeholders)
        raise InvalidInput(
            f"guidance is plain text placed in this scope's section of the extraction prompt, "
            f"not a template: {named} would be sent as written. Say what belongs in this "
            "scope instead; the whole template is edited on the agent or an individual scope.",
            details=[{"field": field}],
        )
    return text


def render_extraction(template: str, context: ExtractionContext) -> str:
    """The extraction prompt for one formation: every scope and shard in one call, with
    the cap and word limit of each place (a template without `{limits}` gets them last)."""
    limits = limits_block(context.target_limits)
    prompt = _render(
        "extraction",
        template,
        conversation=_conversation(context.lines),
        user_name=_user_names(context),
        groups=_groups(context) or NO_GROUPS,
        collective=context.collective_guidance.strip() or NO_COLLECTIVE_GUIDANCE,
        shards="\n\n".join(
            f"## Shard: {shard.name}\n{shard.guidance.strip()}" for shard in context.shards
        )
        or NO_SHARDS,
        consolidations="\n\n".join(
            f"## {label}\n{text.strip()}"
            for label, text in context.consolidations.items()
            if text and text.strip()
        )
        or NO_CONSOLIDATIONS,
        max_observations=context.max_observations,
        max_words=context.max_words,
        limits=limits,
    )
    if context.target_limits and "limits" not in template_fields(template):
        prompt += f"\n\n{LIMITS_HEADING}\n{limits}"
    return prompt


LIMITS_HEADING = "# How much to record in each place"


def limits_block(limits: dict[str, tuple[int, int]]) -> str:
    """One line per place: the most observations it takes and the most words each."""
    lines = [
        f"- {label}: at most {cap} observation{'' if cap == 1 else 's'}, each at most {words} words"
        for label, (cap, words) in limits.items()
    ]
    return "\n".join(lines) or "(no limits)"


def render_consolidation(template: str, context: ConsolidationContext) -> str:
    """The consolidation prompt for one run over a scope's pending observations."""
    observations = sorted(context.observations, key=lambda o: o.observed_at)
    current = (context.current or "").strip()
    return _render(
        "consolidation",
        template,
        scope=context.scope_description,
        consolidation=current or NO_CONSOLIDATION,
        observations="\n".join(
            f"- [{o.observed_at:%Y-%m-%d}] {f'[{o.id}] ' if o.id else ''}{_one_line(o.content)}"
            for o in observations
        )
        or NO_OBSERVATIONS,
        max_words=context.max_words,
    )


def render_propagation(template: str, context: PropagationContext) -> str:
    """The propagation prompt for the observations one consolidation just absorbed."""
    # Targets are group names (a ready "group:<name>" label is not prefixed again): the
    # model answers with a target exactly as listed here.
    targets = [
        "- collective (lessons for all users of this assistant)"
        if target == COLLECTIVE_TARGET
        else f"- group:{_one_line(target.removeprefix('group:'))}"
        for target in context.targets
    ]
    candidates = "\n".join(
        f"- [{candidate_id}] {_one_line(text)}" for candidate_id, text in context.candidates
    )
    targets_text = "\n".join(targets)
    if candidates and "{candidates}" not in template:
        targets_text += f'\n\nOpen collective candidates (name one in "supports"):\n{candidates}'
    return _render(
        "propagation",
        template,
        observations=_bullets(context.observations) or NO_OBSERVATIONS,
        targets=targets_text,
        source=context.source_description,
        candidates=candidates or NO_OBSERVATIONS,
    )


def _render(kind: PromptKind, template: str, **values: object) -> str:
    # Values are substituted once and never re-parsed, so braces in a conversation
    # or an observation cannot reach the template.
    return validate_template(kind, template).format_map(values)


def _conversation(lines: list[ConversationLine]) -> str:
    # Oldest first; callers usually pass the buffer in order, but a dated list is sorted
    # (stably) so a re-sent message cannot appear out of place.
    if all(line.created_at is not None for line in lines):
        lines = sorted(lines, key=lambda line: cast(datetime, line.created_at))
    return "\n".join(
        f"[{line.message_id or line.role}] {_speaker(line)}: {_indent_continuation(line.content)}"
        for line in lines
    )


def _speaker(line: ConversationLine) -> str:
    """A person's line names them and their id, the id the answer's scope label uses."""
    return f"{line.speaker} ({line.user_id})" if line.user_id else line.speaker


PAUSED_NOTE = "(paused: record nothing for it)"


def _user_names(context: ExtractionContext) -> str:
    """Who the conversation is with; a paused person's memory is named so, to record nothing."""
    names = context.user_name.strip() or "(unknown)"
    paused = [label.split(":", 1)[1] for label in context.paused if label.startswith("individual:")]
    if paused:
        names += "\nPaused memory (record nothing about them): " + ", ".join(paused)
    return names


def _groups(context: ExtractionContext) -> str:
    """One line per group; its guidance, if any, indented under its name."""
    lines = []
    for name in context.group_names:
        if not name.strip():
            continue
        paused = f"group:{name}".lower() in {label.lower() for label in context.paused}
        lines.append(f"- {_one_line(name)}" + (f" {PAUSED_NOTE}" if paused else ""))
        guidance = context.group_guidance.get(name, "").strip()
        if guidance:
            lines.append("  What belongs here: " + _indent_continuation(guidance))
    return "\n".join(lines)


def _indent_continuation(content: str) -> str:
    """Multi-line content stays visibly inside its line, so it cannot pose as another speaker."""
    return "\n  ".join(content.strip().splitlines())


def _one_line(content: str) -> str:
    return " ".join(content.split())


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {_one_line(item)}" for item in items if item.strip())


def _malformed(reason: str) -> InvalidInput:
    return InvalidInput(
        f"the template is malformed: {reason}", details=[{"field": "text", "malformed": reason}]
    )
