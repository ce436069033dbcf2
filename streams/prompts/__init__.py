"""Prompts: the code defaults, template validation and rendering, versions and resolution.

Extraction, consolidation and propagation each run from one template. The code
defaults (`defaults.py`) hold until an operator saves an agent default or a
scope override; every save is a new version (`versions.py`). A group's, the
collective's and a shard's extraction text is not a template but guidance that
the extraction template places in that scope's section (`validate_guidance`).
`resolver.py` decides, per call, every text sent and where it came from.
"""

from __future__ import annotations

from streams.core.documents import PROMPT_KINDS, PromptKind, PromptVersion
from streams.prompts.defaults import DEFAULT_TEMPLATES
from streams.prompts.resolver import (
    Draft,
    PromptPart,
    ResolvedPrompt,
    effective_prompt,
    resolve_extraction,
    resolve_for_scope,
    resolve_template,
)
from streams.prompts.templates import (
    MAX_GUIDANCE_CHARS,
    MAX_SHARD_GUIDANCE_CHARS,
    MAX_TEMPLATE_CHARS,
    PLACEHOLDERS,
    Placeholder,
    render_consolidation,
    render_extraction,
    render_propagation,
    template_fields,
    validate_guidance,
    validate_shard_guidance,
    validate_template,
)
from streams.prompts.versions import (
    EffectivePrompt,
    PromptRole,
    PromptSource,
    code_default,
    prompt_clear,
    prompt_current,
    prompt_history,
    prompt_revert,
    prompt_role,
    prompt_save,
    prompt_version_text,
    validate_prompt,
)

__all__ = [
    "DEFAULT_TEMPLATES",
    "MAX_GUIDANCE_CHARS",
    "MAX_SHARD_GUIDANCE_CHARS",
    "MAX_TEMPLATE_CHARS",
    "PLACEHOLDERS",
    "PROMPT_KINDS",
    "Draft",
    "EffectivePrompt",
    "Placeholder",
    "PromptKind",
    "PromptPart",
    "PromptRole",
    "PromptSource",
    "PromptVersion",
    "ResolvedPrompt",
    "code_default",
    "effective_prompt",
    "prompt_clear",
    "prompt_current",
    "prompt_history",
    "prompt_revert",
    "prompt_role",
    "prompt_save",
    "prompt_version_text",
    "render_consolidation",
    "render_extraction",
    "render_propagation",
    "resolve_extraction",
    "resolve_for_scope",
    "resolve_template",
    "template_fields",
    "validate_guidance",
    "validate_prompt",
    "validate_shard_guidance",
    "validate_template",
]
