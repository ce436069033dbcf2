"""Limits and models in effect for a scope, and where each value comes from.

Resolved code < agent < scope, as prompts are: the scope's own value when set, else the
agent's default for the scope's kind (`Agent.scope_defaults`), else the code's
(`streams.core.scope_limits`; for models, the provider's MEMORY_LLM_MODEL_FAST / _SLOW).
The extraction model is the agent's (one call serves every scope of a conversation).
A model named by an agent or a scope must be in the price table (MEMORY_LLM_PRICES), so
its cost is known; the request carries it (`LLMRequest.model`) only when one is named, so
a code default stays whatever the provider is configured with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams.core.documents import Agent, Scope
from streams.core.exceptions import InvalidInput
from streams.core.scope_limits import (
    KIND_DEFAULT_FIELDS,
    LIMIT_FIELDS,
    MAX_MODEL_NAME,
    SCOPE_KINDS,
    LimitSource,
    code_default,
    item_cap_for_tokens,
    limit_range,
)
from streams.store import MemoryStore

WHERE = {"code": "code default", "agent": "agent default", "scope": "scope override"}
MODEL_TASK = {
    "extraction_model": "extraction",
    "consolidation_model": "consolidation",
    "propagation_model": "propagation",
}


@dataclass(frozen=True)
class InEffect:
    """One setting's value in effect and its level."""

    value: Any
    source: LimitSource

    @property
    def where(self) -> str:
        return WHERE[self.source]

    @property
    def named_model(self) -> str | None:
        """The model a request names (None: the provider's own, the code default)."""
        return None if self.source == "code" else self.value


@dataclass(frozen=True)
class ScopeLimits:
    """What a scope (or a scope kind of an agent, before its scope exists) takes."""

    kind: str
    item_words: InEffect
    item_cap: InEffect  # the ceiling; `cap_for` grows towards it with the conversation
    consolidation_model: InEffect
    propagation_model: InEffect

    def cap_for(self, tokens: float) -> int:
        return item_cap_for_tokens(ceiling=int(self.item_cap.value), tokens=tokens)

    def get(self, field: str) -> InEffect:
        value: InEffect = getattr(self, field)
        return value


def kind_limits(
    *, store: MemoryStore, agent: Agent | None, kind: str, scope: Scope | None = None
) -> ScopeLimits:
    """The limits of `scope` (or of a new scope of `kind`): scope < agent < code."""
    defaults = (agent.scope_defaults.get(kind) if agent else None) or {}
    values: dict[str, InEffect] = {}
    for field in KIND_DEFAULT_FIELDS:
        own = getattr(scope, field, None) if scope is not None else None
        if own is not None:
            values[field] = InEffect(own, "scope")
        elif defaults.get(field) is not None:
            values[field] = InEffect(defaults[field], "agent")
        elif field in LIMIT_FIELDS:
            values[field] = InEffect(code_default(field, kind), "code")
        else:
            values[field] = InEffect(store.default_models[MODEL_TASK[field]], "code")
    return ScopeLimits(kind=kind, **values)


def scope_limits(*, store: MemoryStore, scope: Scope) -> ScopeLimits:
    """The limits in effect for a stored scope (one read of its agent)."""
    agent = store.agents.settings(scope.agent_id)
    return kind_limits(store=store, agent=agent, kind=scope.kind, scope=scope)


def kind_defaults(*, store: MemoryStore, scope: Scope) -> ScopeLimits:
    """What the scope would take without its own values (what emptying a field gives)."""
    agent = store.agents.settings(scope.agent_id)
    return kind_limits(store=store, agent=agent, kind=scope.kind)


def scope_limits_and_defaults(
    *, store: MemoryStore, scope: Scope
) -> tuple[ScopeLimits, ScopeLimits]:
    """`scope_limits` and `kind_defaults` of one scope from one read of its agent (the
    settings form shows both)."""
    agent = store.agents.settings(scope.agent_id)
    return (
        kind_limits(store=store, agent=agent, kind=scope.kind, scope=scope),
        kind_limits(store=store, agent=agent, kind=scope.kind),
    )


def extraction_model(*, store: MemoryStore, agent: Agent | None) -> InEffect:
    """The agent's extraction model, else the code's."""
    if agent is not None and agent.extraction_model:
        return InEffect(agent.extraction_model, "agent")
    return InEffect(store.default_models["extraction"], "code")


def agent_limits(*, store: MemoryStore, agent: Agent | None) -> dict[str, ScopeLimits]:
    """Per scope kind, what a scope of the agent takes when it sets nothing itself."""
    return {kind: kind_limits(store=store, agent=agent, kind=kind) for kind in SCOPE_KINDS}


# -- checking what an operator sends ------------------------------------------------------


def model_checked(*, store: MemoryStore, field: str, value: Any) -> str | None:
    """A model name of the price table, or None (back to the level below); else a 422."""
    if value is None:
        return None
    name = value.strip() if isinstance(value, str) else None
    if not name or len(name) > MAX_MODEL_NAME:
        raise InvalidInput(f"{field} must be a model name or null", details=[{"field": field}])
    if name not in store.prices:
        known = ", ".join(sorted(store.prices)) or "none"
        raise InvalidInput(
            f"{field}: {name!r} is not in the price table (MEMORY_LLM_PRICES: {known})",
            details=[{"field": field, "model": name}],
        )
    return name


def limit_checked(*, field: str, value: Any) -> int | None:
    """A whole number in the field's range, or None (back to the level below); else a 422."""
    low, high = limit_range(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(
            f"{field} must be null (the level below) or a whole number from {low} to {high}",
            details=[{"field": field}],
        )
    return value


def limits_changes_check(*, store: MemoryStore, changes: dict[str, Any], prefix: str = "") -> dict:
    """The limit and model fields of `changes`, checked (`prefix` names them in errors)."""
    checked: dict[str, Any] = {}
    for field, value in changes.items():
        name = f"{prefix}{field}"
        if field in LIMIT_FIELDS:
            checked[field] = limit_checked(field=name, value=value)
        elif field in MODEL_TASK:
            checked[field] = model_checked(store=store, field=name, value=value)
        else:
            raise InvalidInput(f"not a limit or model setting: {name}", details=[{"field": name}])
    return checked


def scope_limit_checked(*, store: MemoryStore | None, scope: Scope, field: str, value: Any) -> Any:
    """A scope's item limit or model (None: the agent's or code's), checked."""
    if field == "propagation_model" and scope.scope_type == "collective":
        raise InvalidInput(
            "the collective memory does not propagate: it has no propagation model",
            details=[{"field": field}],
        )
    if store is None:  # model names are checked against the store's price table
        raise RuntimeError("scope_changes_check needs the store to check limits and models")
    return limits_changes_check(store=store, changes={field: value})[field]


def scope_defaults_checked(*, store: MemoryStore, value: Any) -> dict[str, dict[str, Any]]:
    """An agent's `scope_defaults` patch: {kind: {field: value or None}}, checked."""
    if not isinstance(value, dict):
        raise InvalidInput(
            "scope_defaults must be an object by scope kind", details=[{"field": "scope_defaults"}]
        )
    checked: dict[str, dict[str, Any]] = {}
    for kind, fields in value.items():
        where = f"scope_defaults.{kind}"
        if kind not in SCOPE_KINDS:
            raise InvalidInput(
                f"{where}: not a scope kind ({', '.join(SCOPE_KINDS)})", details=[{"field": where}]
            )
        if not isinstance(fields, dict):
            raise InvalidInput(f"{where} must be an object", details=[{"field": where}])
        unknown = sorted(set(fields) - set(KIND_DEFAULT_FIELDS))
        if unknown:
            raise InvalidInput(
                f"{where}: not a scope-type default: {', '.join(unknown)}",
                details=[{"field": f"{where}.{name}"} for name in unknown],
            )
        checked[kind] = limits_changes_check(store=store, changes=fields, prefix=f"{where}.")
    return checked


def scope_defaults_merged(
    current: dict[str, dict[str, Any]], patch: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The agent's defaults after a checked patch: a null value removes that default."""
    merged = {kind: dict(fields) for kind, fields in current.items()}
    for kind, fields in patch.items():
        own = merged.setdefault(kind, {})
        for field, value in fields.items():
            if value is None:
                own.pop(field, None)
            else:
                own[field] = value
        if not own:
            merged.pop(kind)
    return merged


__all__ = [
    "InEffect",
    "ScopeLimits",
    "agent_limits",
    "extraction_model",
    "kind_defaults",
    "kind_limits",
    "limit_checked",
    "limits_changes_check",
    "model_checked",
    "scope_defaults_checked",
    "scope_limit_checked",
    "scope_defaults_merged",
    "scope_limits",
]
