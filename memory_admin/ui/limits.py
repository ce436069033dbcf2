"""Limits and models on the settings pages: a scope's own block of the settings form, and
an agent's page (its extraction model, and what each scope type takes by default).

Each field shows the value in effect and where it comes from (code, agent, scope), read
from the same resolver the formation and the model calls use
(`streams.memory.scope_limits`); an empty field falls back to the level below.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, form_errors
from memory_admin.ui.roles import Role, role_required
from streams.actions.agent_limits import do_agent_limits_update
from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.scope_limits import (
    ITEM_CAP_RANGE,
    ITEM_WORDS_RANGE,
    KIND_DEFAULT_FIELDS,
    SCOPE_KINDS,
)
from streams.memory.scope_limits import (
    InEffect,
    ScopeLimits,
    agent_limits,
    extraction_model,
    kind_limits,
    scope_limits_and_defaults,
)
from streams.selectors import agent_get

LABELS = {
    "item_words": "Words per observation",
    "item_cap": "Observations per formation (ceiling)",
    "consolidation_model": "Consolidation model",
    "propagation_model": "Propagation model",
    "extraction_model": "Extraction model",
}
CAP_HELP = "The cap is 5 per started 1,000 conversation tokens, at most this."


def _model_choices(store: MemoryStore) -> list[tuple[str, str]]:
    """The price table's models (MEMORY_LLM_PRICES): a model without a price is refused."""
    return [("", "(the level below)"), *((m, m) for m in sorted(store.prices))]


def _field(
    store: MemoryStore,
    name: str,
    effect: InEffect,
    *,
    own: str,
    fallback: str,
    cap_note: bool = True,
) -> Any:
    """One setting's field; its help says what is in effect and from where, and, when this
    level sets it (`own`), what emptying it gives."""
    help_text = f"In effect: {effect.value} ({effect.where})."
    if effect.source == own:
        help_text += f" Empty: {fallback}."
    if name == "item_cap" and cap_note:
        help_text = f"{help_text} {CAP_HELP}"
    if name in ("item_words", "item_cap"):
        low, high = ITEM_WORDS_RANGE if name == "item_words" else ITEM_CAP_RANGE
        return forms.IntegerField(
            required=False, min_value=low, max_value=high, label=LABELS[name], help_text=help_text
        )
    return forms.ChoiceField(
        required=False, choices=_model_choices(store), label=LABELS[name], help_text=help_text
    )


class ScopeLimitsForm(forms.Form):
    """The scope's limits and models (fields added per scope: the collective has no
    propagation model)."""


def scope_limits_form(store: MemoryStore, scope: Scope, data: Any = None) -> ScopeLimitsForm:
    limits, below = scope_limits_and_defaults(store=store, scope=scope)
    form = ScopeLimitsForm(
        data, initial={name: getattr(scope, name) or "" for name in KIND_DEFAULT_FIELDS}
    )
    for name in _scope_fields(scope):
        fallback = f"{below.get(name).value} ({below.get(name).where})"
        form.fields[name] = _field(store, name, limits.get(name), own="scope", fallback=fallback)
    return form


def _scope_fields(scope: Scope) -> list[str]:
    if scope.scope_type == "collective":  # the collective and its shards do not propagate
        return [f for f in KIND_DEFAULT_FIELDS if f != "propagation_model"]
    return list(KIND_DEFAULT_FIELDS)


def scope_limits_changes(form: ScopeLimitsForm) -> dict[str, Any]:
    """The changed fields of a valid form, an empty one as None (the level below)."""
    return {
        name: (form.cleaned_data[name] if form.cleaned_data[name] not in ("", None) else None)
        for name in form.changed_data
    }


# -- the agent's page ------------------------------------------------------------------


def _agent_form(store: MemoryStore, agent_id: str, data: Any = None) -> forms.Form:
    agent = agent_get(store=store, agent_id=agent_id)
    form = forms.Form(data)
    effect = extraction_model(store=store, agent=agent)
    form.fields["extraction_model"] = _field(
        store,
        "extraction_model",
        effect,
        own="agent",
        fallback=f"{store.default_models['extraction']} (code default)",
    )
    form.initial["extraction_model"] = agent.extraction_model or ""
    for kind, limits in agent_limits(store=store, agent=agent).items():
        code = kind_limits(store=store, agent=None, kind=kind)
        for name in KIND_DEFAULT_FIELDS:
            key = f"{kind}__{name}"
            fallback = f"{code.get(name).value} (code default)"
            form.fields[key] = _field(
                store, name, limits.get(name), own="agent", fallback=fallback, cap_note=False
            )
            form.initial[key] = (agent.scope_defaults.get(kind) or {}).get(name) or ""
    return form


def _agent_changes(form: forms.Form) -> dict[str, Any]:
    changed = set(form.changed_data)
    changes: dict[str, Any] = {}
    if "extraction_model" in changed:
        changes["extraction_model"] = form.cleaned_data["extraction_model"] or None
    defaults: dict[str, dict[str, Any]] = {}
    for kind in SCOPE_KINDS:
        for name in KIND_DEFAULT_FIELDS:
            key = f"{kind}__{name}"
            if key in changed:
                value = form.cleaned_data[key]
                defaults.setdefault(kind, {})[name] = None if value in ("", None) else value
    if defaults:
        changes["scope_defaults"] = defaults
    return changes


def _rows(form: forms.Form) -> list[dict[str, Any]]:
    """One row per scope type, one bound field per setting, for the page's table."""
    return [
        {"kind": kind, "fields": [form[f"{kind}__{name}"] for name in KIND_DEFAULT_FIELDS]}
        for kind in SCOPE_KINDS
    ]


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def agent_limits_page(request: HttpRequest, agent_id: str) -> HttpResponse:
    """An agent's limits and models: GET shows them, POST saves what changed (audited)."""
    store = get_store()
    try:
        form = _agent_form(store, agent_id, request.POST if request.method == "POST" else None)
    except NotFound as exc:
        raise Http404(f"no agent {agent_id!r}") from exc
    status, saved = 200, False
    if request.method == "POST":
        if form.is_valid():
            try:
                changes = _agent_changes(form)
                if changes:
                    do_agent_limits_update(
                        store=store, actor=actor(request), agent_id=agent_id, **changes
                    )
                saved = True
                form = _agent_form(store, agent_id)
            except InvalidInput as exc:
                _agent_error(form, exc)
        status = 200 if saved else 422
    context = {
        "agent_id": agent_id,
        "form": form,
        "rows": _rows(form),
        "labels": [LABELS[name] for name in KIND_DEFAULT_FIELDS],
        "saved": saved,
    }
    return render(request, "ui/agent_limits.html", context, status=status)


def _agent_error(form: forms.Form, exc: InvalidInput) -> None:
    """`scope_defaults.group.item_words` is the form's `group__item_words`."""
    details = exc.details if isinstance(exc.details, list) else []
    for item in details:
        if isinstance(item, dict) and isinstance(item.get("field"), str):
            key = item["field"].removeprefix("scope_defaults.").replace(".", "__")
            if key in form.fields:
                form.add_error(key, exc.message)
                return
    form_errors(form, exc, default_field="extraction_model")


__all__ = [
    "ScopeLimits",
    "ScopeLimitsForm",
    "agent_limits_page",
    "scope_limits_changes",
    "scope_limits_form",
]
