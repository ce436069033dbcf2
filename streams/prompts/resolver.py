"""The prompt resolver: for one call, every text sent to the model and where it came from.

The LLM requests (formation, consolidation, propagation, dry runs, prompt checks)
are rendered from what these functions return, and every page that says which
prompt is in effect shows the same parts, so the UI cannot claim an override the
model never sees. How the levels combine:

- The template (the whole prompt) is the most specific of: the scope's override
  (extraction: the individual scope of the user talking; consolidation: the scope
  consolidated; propagation: the source scope), the agent default, the code default.
- Extraction is one call for every scope involved: a group's, the collective's and
  a shard's saved text is guidance placed in that scope's section of the template.
  A guidance part is in effect only when the template in effect has the section's
  placeholder (`{groups}`, `{collective}`, `{shards}`); a custom template without it
  drops the guidance, and the resolver says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from streams.core.documents import PromptKind, Scope
from streams.core.ids import require_object_id
from streams.prompts.defaults import DEFAULT_TEMPLATES
from streams.prompts.templates import (
    PLACEHOLDER_NAME,
    PLACEHOLDERS,
    check_kind,
    template_fields,
)
from streams.prompts.versions import EffectivePrompt, PromptSource, prompt_role
from streams.store import MemoryStore

GuidanceSection = Literal["groups", "collective", "shards"]


@dataclass(frozen=True)
class Draft:
    """Unsaved text for one level (None: the agent default), used instead of what is saved
    there: a dry run or a prompt check resolves exactly as the real call would after a save."""

    text: str
    scope_id: str | None = None


@dataclass(frozen=True)
class PromptPart:
    """One text of a call: the template, or one scope's guidance."""

    kind: PromptKind
    role: Literal["template", "guidance"]
    text: str
    source: PromptSource  # "default" (code), "agent" (agent default), "scope" (saved on it)
    version: int | None  # None: the code default, a draft, or guidance set before versions
    scope_id: str | None = None  # the scope this text is saved on (or drafted for)
    section: str | None = None  # guidance: "group:<name>", "collective", "shard:<name>"
    in_effect: bool = True
    note: str = ""  # why a saved text is not sent
    draft: bool = False

    @property
    def where(self) -> str:
        """Where the text comes from, in words ("scope override v3", "code default")."""
        if self.draft:
            return "your draft"
        if self.source == "default":
            return "code default" if self.role == "template" else "no guidance (code default)"
        name = {"agent": "agent default", "scope": "scope override"}[self.source]
        if self.role == "guidance":
            name = "scope guidance"
        return f"{name} v{self.version}" if self.version else name


@dataclass(frozen=True)
class ResolvedPrompt:
    kind: PromptKind
    template: PromptPart
    guidance: tuple[PromptPart, ...] = ()

    def guidance_text(self, section: str) -> str:
        """The guidance sent for one section, or "" when none is in effect."""
        for part in self.guidance:
            if part.section == section and part.in_effect:
                return part.text
        return ""

    @property
    def parts(self) -> tuple[PromptPart, ...]:
        return (self.template, *self.guidance)


def resolve_template(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    scope: Scope | None = None,
    draft: Draft | None = None,
) -> PromptPart:
    """The whole template of a call: the scope's override, the agent's, or the code's.

    At most two indexed reads. `scope` is the scope whose override may apply (extraction:
    the individual scope; a non-individual scope holds guidance, not a template).
    """
    prompt_kind = check_kind(kind)
    if scope is not None and prompt_role(prompt_kind, scope) == "guidance":
        scope = None
    if scope is not None and prompt_kind == "propagation" and scope.scope_type == "collective":
        scope = None
    if scope is not None:
        if draft is not None and draft.scope_id == scope.id:
            return _draft_part(prompt_kind, draft, "scope")
        override = store.prompts.latest(
            agent_id=agent_id, scope_id=require_object_id(scope.id, what="scope"), kind=prompt_kind
        )
        if override is not None and not override.cleared:
            return PromptPart(
                prompt_kind, "template", override.text, "scope", override.version, scope.id
            )
    if draft is not None and draft.scope_id is None:
        return _draft_part(prompt_kind, draft, "agent")
    agent_default = store.prompts.latest(agent_id=agent_id, scope_id=None, kind=prompt_kind)
    if agent_default is not None and not agent_default.cleared:
        return PromptPart(
            prompt_kind, "template", agent_default.text, "agent", agent_default.version
        )
    return PromptPart(prompt_kind, "template", DEFAULT_TEMPLATES[prompt_kind], "default", None)


def effective_prompt(
    *, store: MemoryStore, agent_id: str, kind: str, scope_id: str | None = None
) -> EffectivePrompt:
    """The template in effect for `scope_id` (the shape runs record beside their results)."""
    scope = store.scopes.get(require_object_id(scope_id, what="scope")) if scope_id else None
    part = resolve_template(store=store, agent_id=agent_id, kind=kind, scope=scope)
    return EffectivePrompt(part.kind, part.text, part.source, part.version)


def resolve_extraction(
    *,
    store: MemoryStore,
    agent_id: str,
    individual: Scope | None,
    groups: list[tuple[str, Scope | None]],
    collective: Scope | None,
    shards: list[Scope],
    draft: Draft | None = None,
) -> ResolvedPrompt:
    """The one extraction call of a formation: the template, and each section's guidance.

    `groups` are (name, scope or None when it has none yet) of the user's groups; the
    scopes are the ones the formation reads anyway, whose documents carry their guidance.
    """
    template = resolve_template(
        store=store, agent_id=agent_id, kind="extraction", scope=individual, draft=draft
    )
    fields = set(template_fields(template.text))
    guidance: list[PromptPart] = []
    for name, scope in groups:
        guidance.append(_guidance(scope, f"group:{name}", "groups", fields, draft))
    guidance.append(_guidance(collective, "collective", "collective", fields, draft))
    for shard in shards:
        guidance.append(_guidance(shard, f"shard:{shard.name}", "shards", fields, draft))
    return ResolvedPrompt("extraction", template, tuple(guidance))


def resolve_for_scope(
    *, store: MemoryStore, scope: Scope, draft: Draft | None = None
) -> dict[PromptKind, ResolvedPrompt | None]:
    """What each kind of call involving this scope sends, as the scope page shows it.

    Extraction: a group's, the collective's or a shard's guidance sits in the template
    of whoever is talking; shown here with the agent's template (an individual scope's
    override, when the user talking has one, replaces it). None: no call of that kind
    involves the scope (the collective memory does not propagate).
    """
    agent_id = scope.agent_id
    if scope.scope_type == "individual":
        extraction = resolve_extraction(
            store=store,
            agent_id=agent_id,
            individual=scope,
            groups=[],
            collective=None,
            shards=[],
            draft=draft,
        )
        extraction = replace(extraction, guidance=())
    else:
        extraction = resolve_extraction(
            store=store,
            agent_id=agent_id,
            individual=None,
            groups=[(scope.label, scope)] if scope.scope_type == "group" else [],
            collective=scope if scope.scope_type == "collective" and not scope.is_shard else None,
            shards=[scope] if scope.is_shard else [],
            draft=draft,
        )
        extraction = replace(
            extraction, guidance=tuple(p for p in extraction.guidance if p.scope_id == scope.id)
        )
    result: dict[PromptKind, ResolvedPrompt | None] = {"extraction": extraction}
    consolidation = resolve_template(
        store=store, agent_id=agent_id, kind="consolidation", scope=scope, draft=draft
    )
    result["consolidation"] = ResolvedPrompt("consolidation", consolidation)
    if scope.scope_type == "collective":
        result["propagation"] = None
    else:
        propagation = resolve_template(
            store=store, agent_id=agent_id, kind="propagation", scope=scope, draft=draft
        )
        result["propagation"] = ResolvedPrompt("propagation", propagation)
    return result


def _guidance(
    scope: Scope | None,
    section: str,
    placeholder: GuidanceSection,
    fields: set[str],
    draft: Draft | None,
) -> PromptPart:
    text, version, is_draft = "", None, False
    if scope is not None:
        text, version = (scope.extraction_prompt or "").strip(), scope.guidance_version
        if draft is not None and draft.scope_id == scope.id:
            text, version, is_draft = draft.text.strip(), None, True
    part = PromptPart(
        "extraction",
        "guidance",
        text,
        "scope" if text else "default",
        version if text else None,
        scope.id if scope else None,
        section,
        draft=is_draft,
    )
    if text and _is_template(text):
        # Saved as a group's template override before group text became guidance: it
        # would reach the model as literal braces, so it is not sent until replaced.
        return replace(
            part,
            in_effect=False,
            note="this is a whole template saved before scope guidance existed: "
            "save guidance in its place",
        )
    if text and placeholder not in fields:
        return replace(
            part,
            in_effect=False,
            note=f"the extraction template in effect has no {{{placeholder}}} placeholder, "
            "so this guidance is not sent",
        )
    if text and scope is not None and not scope.is_active:
        return replace(part, in_effect=False, note="the scope is paused")
    return part


def _is_template(text: str) -> bool:
    return bool(set(PLACEHOLDER_NAME.findall(text)) & PLACEHOLDERS["extraction"].keys())


def _draft_part(kind: PromptKind, draft: Draft, source: PromptSource) -> PromptPart:
    return PromptPart(kind, "template", draft.text, source, None, draft.scope_id, draft=True)
