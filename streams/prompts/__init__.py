"""Prompts: the code defaults, template validation and rendering, versions and resolution.

Extraction, consolidation and propagation each run from one template. The code
defaults (`defaults.py`) hold until an operator saves an agent default or a
scope override; every save is a new version (`versions.py`). A collective
shard's `extraction_prompt` is not a template but guidance text that the
extraction template places in its `{shards}` section (`validate_shard_guidance`).
"""

from __future__ import annotations

from streams.documents import PROMPT_KINDS, PromptKind, PromptVersion
from streams.prompts.defaults import DEFAULT_TEMPLATES
from streams.prompts.templates import (
    MAX_SHARD_GUIDANCE_CHARS,
    MAX_TEMPLATE_CHARS,
    PLACEHOLDERS,
    Placeholder,
    render_consolidation,
    render_extraction,
    render_propagation,
    template_fields,
    validate_shard_guidance,
    validate_template,
)
from streams.prompts.versions import (
    EffectivePrompt,
    PromptSource,
    effective_prompt,
    prompt_clear,
    prompt_current,
    prompt_history,
    prompt_revert,
    prompt_save,
)

__all__ = [
    "DEFAULT_TEMPLATES",
    "MAX_SHARD_GUIDANCE_CHARS",
    "MAX_TEMPLATE_CHARS",
    "PLACEHOLDERS",
    "PROMPT_KINDS",
    "EffectivePrompt",
    "Placeholder",
    "PromptKind",
    "PromptSource",
    "PromptVersion",
    "effective_prompt",
    "prompt_clear",
    "prompt_current",
    "prompt_history",
    "prompt_revert",
    "prompt_save",
    "render_consolidation",
    "render_extraction",
    "render_propagation",
    "template_fields",
    "validate_shard_guidance",
    "validate_template",
]
