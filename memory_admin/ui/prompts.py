"""Prompt editor: agent defaults and scope overrides with history, diff, revert, and dry
runs beside the prompt in effect; shard guidance is listed here and edited on the shard."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_admin.llm import get_llm_provider
from memory_admin.stores import get_store
from memory_admin.ui.common import actor, audit, flash_error, form_errors, found, param
from memory_admin.ui.diff import side_by_side
from memory_admin.ui.forms import DryRunForm, PromptForm
from memory_admin.ui.htmx import wants_partial
from memory_admin.ui.roles import Role, request_role, role_required
from streams.documents import PROMPT_KINDS, PromptKind, Scope
from streams.dry_run import DryRunResult, dry_run_consolidation, dry_run_extraction
from streams.exceptions import Conflict, InvalidInput, MemoryServiceError
from streams.ids import require_object_id
from streams.prompts import (
    PLACEHOLDERS,
    effective_prompt,
    prompt_current,
    prompt_history,
    prompt_revert,
    prompt_save,
)
from streams.scopes import scope_get
from streams.store import MemoryStore

AGENT_CHOICES = 100
HISTORY_SHOWN = 20
MAX_SHARDS = 50
DRY_RUN_KINDS = ("extraction", "consolidation")
CONFLICT_MESSAGE = (
    "Not saved: someone saved a newer version while you were editing. Your text is kept "
    "here; compare it with the history below and save again."
)


@require_GET
@role_required(Role.VIEWER)
def prompt_index(request: HttpRequest) -> HttpResponse:
    """Per agent: each kind's default with where it comes from, and the shards' guidance."""
    store = get_store()
    agents = store.agents.list_page(after=None, limit=AGENT_CHOICES)
    agent_id = param(request, "agent") or (agents[0].id if agents else None)
    rows = []
    shards: list[Scope] = []
    if agent_id:
        for kind in PROMPT_KINDS:
            current = prompt_current(store=store, agent_id=agent_id, kind=kind)
            prompt = effective_prompt(store=store, agent_id=agent_id, kind=kind)
            rows.append({"kind": kind, "prompt": prompt, "current": current})
        shards = store.scopes.active_shards(agent_id, limit=MAX_SHARDS)
    context = {"agents": agents, "agent_id": agent_id, "rows": rows, "shards": shards}
    return render(request, "ui/prompts.html", context)


def _level(store: MemoryStore, request: HttpRequest, agent_id: str, kind: str) -> Scope | None:
    if kind not in PROMPT_KINDS:
        raise Http404("no such prompt kind")
    scope_id = request.POST.get("scope") or param(request, "scope")
    if not scope_id:
        return None
    scope = found(scope_get, store=store, scope_id=scope_id)
    if scope.agent_id != agent_id:
        raise Http404("scope not found")
    if kind == "extraction" and scope.is_shard:
        raise Http404("a shard's extraction prompt is guidance set on the shard")
    return scope


def _editor_context(
    request: HttpRequest, store: MemoryStore, agent_id: str, kind: str, scope: Scope | None
) -> dict[str, Any]:
    scope_id = scope.id if scope else None
    current = prompt_current(store=store, agent_id=agent_id, kind=kind, scope_id=scope_id)
    in_effect = effective_prompt(store=store, agent_id=agent_id, kind=kind, scope_id=scope_id)
    history = prompt_history(
        store=store, agent_id=agent_id, kind=kind, scope_id=scope_id, limit=HISTORY_SHOWN
    ).items
    role = request_role(request)
    version = current.version if current else 0
    start_text = current.text if current and not current.cleared else in_effect.text
    return {
        "agent_id": agent_id,
        "kind": kind,
        "scope": scope,
        "current": current,
        "in_effect": in_effect,
        "history": history,
        "placeholders": PLACEHOLDERS[cast(PromptKind, kind)],
        "form": PromptForm(initial={"text": start_text, "expected_version": version}),
        "dry_run_form": DryRunForm(initial={"scope": scope_id or "", "user_name": "User"}),
        "can_dry_run": kind in DRY_RUN_KINDS,
        "can_edit": role is not None and role >= Role.OPERATOR,
        "level_url": _level_url(agent_id, kind, scope),
        "compare": _compare(request, store, agent_id, kind, scope),
    }


def _level_url(agent_id: str, kind: str, scope: Scope | None) -> str:
    url = reverse("ui:prompt_edit", args=[agent_id, kind])
    return f"{url}?scope={scope.id}" if scope else url


def _compare(
    request: HttpRequest, store: MemoryStore, agent_id: str, kind: str, scope: Scope | None
) -> dict[str, Any] | None:
    a, b = param(request, "a"), param(request, "b")
    if not (a and b and a.isdigit() and b.isdigit() and len(a) < 10 and len(b) < 10):
        return None
    scope_oid = require_object_id(scope.id, what="scope") if scope else None
    old = store.prompts.get(
        agent_id=agent_id, scope_id=scope_oid, kind=cast(PromptKind, kind), version=int(a)
    )
    new = store.prompts.get(
        agent_id=agent_id, scope_id=scope_oid, kind=cast(PromptKind, kind), version=int(b)
    )
    return {
        "a": int(a),
        "b": int(b),
        "old": old,
        "new": new,
        "diff": side_by_side(old.text if old else "", new.text if new else ""),
    }


@require_GET
@role_required(Role.VIEWER)
def prompt_edit(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    store = get_store()
    scope = _level(store, request, agent_id, kind)
    context = _editor_context(request, store, agent_id, kind, scope)
    if wants_partial(request) and context["compare"]:
        return render(request, "ui/_prompt_diff.html", context)
    return render(request, "ui/prompt_edit.html", context)


@require_POST
@role_required(Role.OPERATOR)
def prompt_save_view(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    store = get_store()
    scope = _level(store, request, agent_id, kind)
    form = PromptForm(request.POST)
    conflict = False
    if form.is_valid():
        try:
            entry = prompt_save(
                store=store,
                agent_id=agent_id,
                kind=kind,
                text=form.cleaned_data["text"],
                author=actor(request),
                scope_id=scope.id if scope else None,
                expected_version=form.cleaned_data["expected_version"],
            )
        except Conflict:
            conflict = True
        except InvalidInput as exc:
            form_errors(form, exc, default_field="text")
        else:
            audit(
                request,
                store=store,
                action="prompt.save",
                object_type="prompt",
                object_id=entry.id,
                agent_id=agent_id,
                summary={"kind": kind, "version": entry.version, "scope_id": entry.scope_id},
            )
            messages.success(request, f"Saved the {kind} prompt as version {entry.version}.")
            return redirect(_level_url(agent_id, kind, scope))
    context = _editor_context(request, store, agent_id, kind, scope)
    if conflict:
        # Keep the operator's text, now based on the newest version, so a second save
        # (after comparing with the history) goes through.
        current = context["current"]
        form = PromptForm(
            {
                "text": request.POST.get("text", ""),
                "expected_version": current.version if current else 0,
            }
        )
        form.is_valid()
        form.add_error("text", CONFLICT_MESSAGE)
    context["form"] = form
    messages.error(request, f"The {kind} prompt was not saved: see the error below.")
    return render(request, "ui/prompt_edit.html", context, status=422)


@require_POST
@role_required(Role.OPERATOR)
def prompt_revert_view(
    request: HttpRequest, agent_id: str, kind: str, version: int
) -> HttpResponse:
    store = get_store()
    scope = _level(store, request, agent_id, kind)
    try:
        entry = prompt_revert(
            store=store,
            agent_id=agent_id,
            kind=kind,
            version=version,
            author=actor(request),
            scope_id=scope.id if scope else None,
        )
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        audit(
            request,
            store=store,
            action="prompt.revert",
            object_type="prompt",
            object_id=entry.id,
            agent_id=agent_id,
            summary={"kind": kind, "reverted_from": version, "version": entry.version},
        )
        messages.success(
            request, f"Reverted the {kind} prompt to version {version} (saved as {entry.version})."
        )
    return redirect(_level_url(agent_id, kind, scope))


@require_POST
@role_required(Role.OPERATOR)
def prompt_dry_run(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Run the edited prompt and the one in effect on the same input; store nothing."""
    store = get_store()
    scope = _level(store, request, agent_id, kind)
    form = DryRunForm(request.POST)
    outcome: dict[str, Any] = {"form": form, "kind": kind, "agent_id": agent_id}
    if kind not in DRY_RUN_KINDS:
        form.add_error(None, f"Dry runs cover extraction and consolidation, not {kind}.")
    elif form.is_valid():
        try:
            outcome.update(_dry_runs(store, agent_id, kind, form.cleaned_data, scope))
        except InvalidInput as exc:
            form_errors(form, exc, default_field="text")
    status = 200 if not form.errors else 422
    if wants_partial(request):
        return render(request, "ui/_dry_run.html", outcome, status=status)
    context = _editor_context(request, store, agent_id, kind, scope)
    expected = context["form"].initial["expected_version"]
    context["form"] = PromptForm(
        initial={"text": request.POST.get("text", ""), "expected_version": expected}
    )
    context["dry_run_form"] = form
    context["dry_run"] = outcome
    return render(request, "ui/prompt_edit.html", context, status=status)


def _dry_runs(
    store: MemoryStore, agent_id: str, kind: str, data: dict[str, Any], level: Scope | None
) -> dict[str, Any]:
    llm = get_llm_provider()
    if kind == "consolidation":
        scope = level
        if data.get("scope"):
            scope = found(scope_get, store=store, scope_id=data["scope"])
            if scope.agent_id != agent_id:
                raise InvalidInput(
                    "that scope belongs to another agent", details=[{"field": "scope"}]
                )
        if scope is None:
            raise InvalidInput(
                "pick a scope whose pending observations to run on", details=[{"field": "scope"}]
            )
        in_effect = effective_prompt(store=store, agent_id=agent_id, kind=kind, scope_id=scope.id)
        edited = dry_run_consolidation(store=store, llm=llm, scope=scope, template=data["text"])
        current = dry_run_consolidation(store=store, llm=llm, scope=scope, template=in_effect.text)
        return _results(edited, current, in_effect, scope, baseline=scope.consolidation or "")
    user_name = data.get("user_name") or "User"
    individual = level if level is not None and level.scope_type == "individual" else None
    in_effect = effective_prompt(
        store=store, agent_id=agent_id, kind=kind, scope_id=level.id if level else None
    )
    common = {
        "store": store,
        "llm": llm,
        "agent_id": agent_id,
        "conversation": data.get("conversation") or "",
        "user_name": user_name,
        "individual": individual,
    }
    edited = dry_run_extraction(template=data["text"], **common)
    current = dry_run_extraction(template=in_effect.text, **common)
    return _results(edited, current, in_effect, level, baseline=None)


def _results(
    edited: DryRunResult,
    current: DryRunResult,
    in_effect: Any,
    scope: Scope | None,
    *,
    baseline: str | None,
) -> dict[str, Any]:
    return {
        "edited": edited,
        "current": current,
        "in_effect": in_effect,
        "dry_scope": scope,
        "baseline": baseline,
        "diff": side_by_side(current.text or "", edited.text or ""),
    }
