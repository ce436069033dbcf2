"""The context's XML, made from its parts, and the token budget that drops parts to fit.

Kept apart from assembly (which reads the store and decides what goes in) so that
replay renders what it reconstructs with exactly the same code.

Memory is data (`MEMORY_INSTRUCTION_POLICY`, `InstructionPolicy`): an observation flagged
`instruction` is shown as `<Observation flag="instruction">...</Observation>` (policy
`mark`, and `review`, where only approved ones are live) or left out (`withhold`); a
consolidation holding an instruction-like sentence puts `flag="instruction"` on its
section's element, and under `withhold` loses that sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

from streams.context.tokens import estimate_tokens
from streams.core.documents import Observation, Scope
from streams.core.instruction_policy import DEFAULT_INSTRUCTION_POLICY, InstructionPolicy
from streams.core.xml_text import SENTENCE_END, xml_attr, xml_text
from streams.guard.instructions import INSTRUCTION, instruction_like

FLAG = "instruction"
MARK = ' flag="instruction"'


@dataclass
class SectionText:
    """One section of the context: its label, its consolidation, its recent observations."""

    label: str
    text: str | None
    recent: list[Observation] = field(default_factory=list)
    key: str = ""  # how `dropped` names it: "shard:<name>", "group:<id>", "collective"
    scope_id: str = ""  # whose memory it is (a budget keeps the user's and groups' longest)
    # Its consolidation holds an instruction-like sentence: its element is marked.
    flagged: bool = False


@dataclass
class ContextParts:
    """What the XML is made of, before it is rendered (a budget drops parts of it)."""

    collective: SectionText | None = None
    shards: list[SectionText] = field(default_factory=list)
    groups: list[SectionText] = field(default_factory=list)
    user: SectionText | None = None
    retrieved: list[Observation] = field(default_factory=list)


Fits = Callable[[], bool]
Keep = Callable[[Observation], bool]

# -- XML ---------------------------------------------------------------------------------


def context_parts(
    *,
    scopes: list[Scope],
    group_ids: list[str],
    group_names: dict[str, str],
    user_name: str | None,
    recent: dict[str, list[Observation]],
    retrieved: list[Observation],
    instruction_policy: InstructionPolicy = DEFAULT_INSTRUCTION_POLICY,
) -> ContextParts:
    """The parts of the context, instruction-flagged text marked or left out per scope."""
    policy_of = {s.id: instruction_policy.for_scope(s.scope_type) for s in scopes}
    recent = {
        scope_id: _shown(found, policy_of.get(scope_id, "mark"))
        for scope_id, found in recent.items()
    }
    retrieved = [o for o in retrieved if _shown([o], policy_of.get(o.scope_id, "mark"))]
    scopes = [_policed(s, policy_of[s.id]) for s in scopes]
    parts = ContextParts(retrieved=list(retrieved))
    _fill_sections(parts, scopes, group_ids, group_names, user_name, recent)
    for section in (parts.collective, *parts.shards, *parts.groups, parts.user):
        if section is not None and section.text and instruction_like(section.text):
            section.flagged = True
    return parts


def _fill_sections(
    parts: ContextParts,
    scopes: list[Scope],
    group_ids: list[str],
    group_names: dict[str, str],
    user_name: str | None,
    recent: dict[str, list[Observation]],
) -> None:
    """A section per scope: the collective, its shards by name, the groups in the
    caller's order, the user."""
    collective = next((s for s in scopes if s.scope_type == "collective" and not s.name), None)
    shards = sorted((s for s in scopes if s.is_shard), key=lambda s: s.name or "")
    by_group = {s.group_id: s for s in scopes if s.scope_type == "group"}
    individual = next((s for s in scopes if s.scope_type == "individual"), None)

    def section(scope: Scope, name: str, tag: str) -> SectionText:
        return SectionText(
            name, scope.consolidation, list(recent.get(scope.id, [])), tag, scope_id=scope.id
        )

    if collective is not None:
        parts.collective = section(collective, "", "collective")
    for s in shards:
        parts.shards.append(section(s, s.name or "", f"shard:{s.name or ''}"))
    for group_id in group_ids:
        scope = by_group.get(group_id)
        if scope is not None:
            name = group_names.get(group_id) or scope.display_name or group_id
            parts.groups.append(section(scope, name, f"group:{group_id}"))
    if individual is not None:
        name = user_name or individual.display_name or individual.user_id or ""
        parts.user = section(individual, name, "user")


def _shown(observations: list[Observation], policy: str) -> list[Observation]:
    if policy != "withhold":
        return list(observations)
    return [o for o in observations if FLAG not in o.flags]


def _policed(scope: Scope, policy: str) -> Scope:
    """`scope` with the instruction-like sentences of its consolidation left out, under
    `withhold` (the scope is copied: the caller's is not changed)."""
    text = scope.consolidation
    if policy != "withhold" or not text or not instruction_like(text):
        return scope
    kept = [s for s in SENTENCE_END.split(text.strip()) if not INSTRUCTION.search(s)]
    return replace(scope, consolidation=" ".join(kept))


def context_render(parts: ContextParts, *, now: datetime) -> str:
    """The XML of `parts`; sections with nothing in them are left out."""
    lines = ["<MemoryContext>"]
    shard_lines: list[str] = []
    for shard in parts.shards:
        shard_lines += _section_lines(
            f"<Shard name={xml_attr(shard.label)}{_mark(shard)}>",
            "</Shard>",
            shard,
            now=now,
            indent="    ",
        )
    collective = parts.collective
    if (collective and _filled(collective)) or shard_lines:
        body = xml_text(collective.text if collective else None)
        mark = MARK if collective is not None and collective.flagged else ""
        lines.append(f"  <CollectiveMemory{mark}>{body}")
        if collective is not None and collective.recent:
            lines += _recent_lines(collective.recent, now=now, indent="    ")
        lines += shard_lines
        lines.append("  </CollectiveMemory>")
    for group in parts.groups:
        lines += _section_lines(
            f"<GroupMemory group={xml_attr(group.label)}{_mark(group)}>",
            "</GroupMemory>",
            group,
            now=now,
        )
    user = parts.user
    if user is not None and _filled(user):
        lines.append(
            f"  <UserMemory user={xml_attr(user.label)}{_mark(user)}>{xml_text(user.text)}"
        )
        if user.recent:
            lines += _recent_lines(user.recent, now=now, indent="    ")
        lines.append("  </UserMemory>")
    if parts.retrieved:
        lines.append("  <RetrievedObservations>")
        lines += [f"      - {_bullet(o, now=now)}" for o in parts.retrieved]
        lines.append("  </RetrievedObservations>")
    lines.append("</MemoryContext>")
    return "\n".join(lines)


def _mark(section: SectionText) -> str:
    return MARK if section.flagged else ""


def _filled(section: SectionText) -> bool:
    return has_text(section.text) or bool(section.recent)


def _section_lines(
    open_tag: str, close_tag: str, section: SectionText, *, now: datetime, indent: str = "  "
) -> list[str]:
    """One line when it has no recent observations (as before), else the block form."""
    if not _filled(section):
        return []
    if not section.recent:
        return [f"{indent}{open_tag}{xml_text(section.text)}{close_tag}"]
    return [
        f"{indent}{open_tag}{xml_text(section.text)}",
        *_recent_lines(section.recent, now=now, indent=indent + "  "),
        f"{indent}{close_tag}",
    ]


def _recent_lines(recent: list[Observation], *, now: datetime, indent: str) -> list[str]:
    return [
        f"{indent}<RecentObservations>",
        *(f"{indent}  - {_bullet(o, now=now)}" for o in recent),
        f"{indent}</RecentObservations>",
    ]


# -- budget ------------------------------------------------------------------------------


def context_fit(
    parts: ContextParts, *, max_tokens: int | None, now: datetime
) -> tuple[str, list[str]]:
    """The XML within `max_tokens` (estimated), and what was dropped to fit, in order.

    The user's own memory is kept longest, then the groups', and the collective's and
    shards' go first (issue 40: a small budget once dropped "prefers short answers" and
    kept generic collective text). Within each of those three tiers: retrieved
    observations first (the weakest first), then recent ones (the oldest first), then the
    sections; the user's own consolidation loses whole sentences from its end (never cut
    mid-sentence) before the user's section goes. `parts` is changed in place.
    """
    xml = context_render(parts, now=now)
    if max_tokens is None or estimate_tokens(xml) <= max_tokens:
        return xml, []
    dropped: list[str] = []

    def fits() -> bool:
        nonlocal xml
        xml = context_render(parts, now=now)
        return estimate_tokens(xml) <= max_tokens

    steps = (_drop_shared, _drop_groups, _drop_user)
    return next(
        ((xml, dropped) for step in steps if step(parts, dropped, fits)),
        (context_render(parts, now=now), dropped),
    )


def _drop_retrieved(parts: ContextParts, dropped: list[str], fits: Fits, keep: Keep) -> bool:
    """Drop the retrieved observations `keep` does not protect, weakest (last) first."""
    for observation in reversed(list(parts.retrieved)):
        if keep(observation):
            continue
        parts.retrieved.remove(observation)
        dropped.append(f"retrieved:{observation.id}")
        if fits():
            return True
    return False


def _drop_recent(sections: list[SectionText], dropped: list[str], fits: Fits) -> bool:
    for section in sections:
        while section.recent:
            dropped.append(f"recent:{section.recent.pop(0).id}")
            if fits():
                return True
    return False


def _drop_shared(parts: ContextParts, dropped: list[str], fits: Fits) -> bool:
    """The collective's and shards' memory: retrieved, recent, then the sections."""
    own = _scope_ids(parts, tiers=("user", "groups"))
    if _drop_retrieved(parts, dropped, fits, lambda o: o.scope_id in own):
        return True
    shared = [*parts.shards, *([parts.collective] if parts.collective is not None else [])]
    if _drop_recent(shared, dropped, fits):
        return True
    while parts.shards:
        dropped.append(parts.shards.pop().key)
        if fits():
            return True
    if parts.collective is not None:
        had_text = has_text(parts.collective.text)
        parts.collective = None
        if had_text:
            dropped.append("collective")
        if fits():
            return True
    return False


def _drop_groups(parts: ContextParts, dropped: list[str], fits: Fits) -> bool:
    own = _scope_ids(parts, tiers=("user",))
    if _drop_retrieved(parts, dropped, fits, lambda o: o.scope_id in own):
        return True
    if _drop_recent(list(parts.groups), dropped, fits):
        return True
    while parts.groups:
        dropped.append(parts.groups.pop().key)
        if fits():
            return True
    return False


def _drop_user(parts: ContextParts, dropped: list[str], fits: Fits) -> bool:
    if _drop_retrieved(parts, dropped, fits, lambda o: False):
        return True
    user = parts.user
    if user is None:
        return False
    if _drop_recent([user], dropped, fits):
        return True
    if has_text(user.text):
        sentences = SENTENCE_END.split((user.text or "").strip())
        total = len(sentences)
        while len(sentences) > 1:
            sentences.pop()
            user.text = " ".join(sentences)
            if fits():
                dropped.append(f"user:last {total - len(sentences)} of {total} sentences")
                return True
    parts.user = None
    dropped.append("user")
    return fits()


def _scope_ids(parts: ContextParts, *, tiers: tuple[str, ...]) -> set[str]:
    """The scope ids of the user's section and/or the groups' (from what they hold)."""
    sections: list[SectionText] = []
    if "user" in tiers and parts.user is not None:
        sections.append(parts.user)
    if "groups" in tiers:
        sections.extend(parts.groups)
    return {s.scope_id for s in sections if s.scope_id}


def has_text(value: str | None) -> bool:
    return bool(value and value.strip())


def _bullet(observation: Observation, *, now: datetime) -> str:
    one_line = xml_text(" ".join(observation.content.split()))
    if FLAG in observation.flags:  # said by someone, to be remembered: never an order
        one_line = f"<Observation{MARK}>{one_line}</Observation>"
    return f"{one_line} ({relative_age(observation.observed_at, now=now)})"


def relative_age(then: datetime, *, now: datetime) -> str:
    """ "just now", "5 minutes ago", "2 hours ago", "3 weeks ago"...: computed per request."""
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "just now" if seconds > -60 else "in the future"
    for unit, size in (
        ("year", 365 * 86400),
        ("month", 30 * 86400),
        ("week", 7 * 86400),
        ("day", 86400),
        ("hour", 3600),
        ("minute", 60),
    ):
        count = int(seconds // size)
        if count >= 1:
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"
