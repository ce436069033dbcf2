"""A dry run with two models side by side: the same prompt (a draft, or the one in effect)
on the same input, once per model, through the request builders the real runs use.

Nothing is stored. The models are checked against the price table like the settings
(`streams.memory.scope_limits.model_checked`), so a comparison never names a model the
agent could not be set to.
"""

from __future__ import annotations

from typing import Any

from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput
from streams.drafts.dry_run import (
    DryRunResult,
    dry_run_consolidation,
    dry_run_extraction,
    dry_run_propagation,
)
from streams.llm.port import LLMProvider
from streams.memory.scope_limits import model_checked
from streams.prompts import Draft
from streams.store import MemoryStore

MAX_MODELS = 2


def checked_models(*, store: MemoryStore, models: Any) -> list[str]:
    """Two different models of the price table, or InvalidInput naming `models`."""
    if not isinstance(models, list) or len(models) != MAX_MODELS:
        raise InvalidInput(
            f"models must list {MAX_MODELS} model names", details=[{"field": "models"}]
        )
    names = [model_checked(store=store, field="models", value=m) for m in models]
    if None in names or len(set(names)) != len(names):
        raise InvalidInput(
            "models must be two different model names", details=[{"field": "models"}]
        )
    return [n for n in names if n]


def dry_run_models(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    agent_id: str,
    kind: str,
    models: list[str],
    draft: Draft | None,
    scope: Scope | None,
    conversation: str = "",
    user_name: str = "",
) -> list[DryRunResult]:
    """One dry run per model, in the order given."""
    results = []
    for model in models:
        if kind == "extraction":
            result = dry_run_extraction(
                store=store,
                llm=llm,
                agent_id=agent_id,
                conversation=conversation,
                user_name=user_name,
                draft=draft,
                level=scope,
                model=model,
            )
        else:
            if scope is None:
                raise InvalidInput(
                    f"a {kind} dry run needs a scope_id", details=[{"field": "scope_id"}]
                )
            run = dry_run_consolidation if kind == "consolidation" else dry_run_propagation
            result = run(store=store, llm=llm, scope=scope, draft=draft, model=model)
        results.append(result)
    return results


__all__ = ["MAX_MODELS", "checked_models", "dry_run_models"]
