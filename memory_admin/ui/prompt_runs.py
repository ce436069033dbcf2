"""Dry runs and prompt checks on the prompt editor: the draft beside the prompt in effect,
on the same input, through the same resolver and request builders as the real calls.
Nothing here stores a prompt, a job or an observation (saving a check is the one write)."""

from __future__ import annotations

from functools import partial
from typing import Any, cast

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, form_errors, found
from memory_admin.ui.diff import side_by_side
from memory_admin.ui.forms import CheckForm, DryRunForm, PromptForm
from memory_admin.ui.htmx import wants_partial
from memory_admin.ui.prompts import check_runs, editor_context, level_part, level_scope
from memory_admin.ui.roles import Role, role_required
from streams.actions.prompts import do_prompt_check_create, do_prompt_check_delete
from streams.core.documents import PromptKind, Scope
from streams.core.exceptions import InvalidInput, MemoryServiceError
from streams.drafts.dry_run import (
    OFFLINE_NOTE,
    DryRunResult,
    dry_run_consolidation,
    dry_run_extraction,
    dry_run_propagation,
    routing_table,
    session_conversation,
)
from streams.drafts.prompt_checks import check_list
from streams.memory.scope_limits import model_checked
from streams.memory.scopes import scope_get
from streams.prompts import Draft, validate_prompt


@require_POST
@role_required(Role.OPERATOR)
def prompt_dry_run(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Run the edited text and the prompt in effect on the same input; store nothing."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    form = DryRunForm(request.POST)
    outcome: dict[str, Any] = {"form": form, "kind": kind, "agent_id": agent_id}
    if form.is_valid():
        try:
            outcome.update(_dry_runs(store, agent_id, kind, form.cleaned_data, scope))
        except InvalidInput as exc:
            form_errors(form, exc, default_field="text")
    status = 200 if not form.errors else 422
    if wants_partial(request):
        return render(request, "ui/_dry_run.html", outcome, status=status)
    context = editor_context(request, store, agent_id, kind, scope, text=request.POST.get("text"))
    context["dry_run_form"] = form
    context["dry_run"] = outcome
    return render(request, "ui/prompt_edit.html", context, status=status)


def _dry_runs(
    store: MemoryStore, agent_id: str, kind: str, data: dict[str, Any], level: Scope | None
) -> dict[str, Any]:
    llm = get_llm_provider()
    text = validate_prompt(cast(PromptKind, kind), level, data["text"])
    draft = Draft(text, level.id if level else None)
    # Two models: the draft on both sides, with the model in effect and with this one.
    compare = model_checked(
        store=store, field="compare_model", value=data.get("compare_model") or None
    )
    baseline_draft = draft if compare else None
    if kind == "extraction":

        def extraction(draft: Draft | None, model: str | None = None) -> Any:
            return dry_run_extraction(
                model=model,
                draft=draft,
                store=store,
                llm=llm,
                agent_id=agent_id,
                conversation=data.get("conversation") or "",
                user_name=data.get("user_name") or "",
                level=level,
                session_id=data.get("session") or None,
            )

        edited, current = extraction(draft, compare), extraction(baseline_draft)
        results = _results(edited, current, level, llm.name, baseline=None, compare=compare)
        # A guidance level's dry run compares guidance: say which is in effect, not the template.
        results["in_effect"] = level_part(store, agent_id, kind, level)
        return results
    scope = level
    if data.get("scope"):
        scope = found(scope_get, store=store, scope_id=data["scope"])
        if scope.agent_id != agent_id:
            raise InvalidInput("that scope belongs to another agent", details=[{"field": "scope"}])
    if scope is None:
        raise InvalidInput(
            "pick a scope to dry-run on (its id, from its page)", details=[{"field": "scope"}]
        )
    run = dry_run_propagation
    if kind == "consolidation":
        run = partial(
            dry_run_consolidation, chunk_tokens=settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS
        )
    edited = run(store=store, llm=llm, scope=scope, draft=draft, model=compare)
    current = run(store=store, llm=llm, scope=scope, draft=baseline_draft)
    baseline = scope.consolidation or "" if kind == "consolidation" else None
    return _results(edited, current, scope, llm.name, baseline=baseline, compare=compare)


def _results(
    edited: DryRunResult,
    current: DryRunResult,
    scope: Scope | None,
    provider: str,
    *,
    baseline: str | None,
    compare: str | None = None,
) -> dict[str, Any]:
    labels = {}
    if compare:  # two models side by side, both with your edit
        in_effect = current.requests[0].model if current.requests else None
        labels = {
            "left_label": f"Your edit, model in effect ({in_effect or 'the code default'})",
            "right_label": f"Your edit, {compare}",
        }
    return {
        **labels,
        "compare_model": compare,
        "edited": edited,
        "current": current,
        "in_effect": current.part,
        "dry_scope": scope,
        "baseline": baseline,
        "routing": routing_table(current, edited),
        "diff": side_by_side(current.text or "", edited.text or ""),
        "offline_note": OFFLINE_NOTE if provider == "offline" else "",
    }


@require_POST
@role_required(Role.OPERATOR)
def prompt_checks_run(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Every check of the agent on the draft in the editor and on the prompt in effect."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    form = PromptForm({"text": request.POST.get("text", ""), "expected_version": 0})
    context: dict[str, Any] = {"agent_id": agent_id, "kind": kind, "scope": scope}
    if not form.is_valid():
        context["error"] = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        return render(request, "ui/_checks.html", _checks_context(store, context), status=422)
    try:
        context["runs"] = check_runs(store, agent_id, kind, scope, form.cleaned_data["text"])
    except MemoryServiceError as exc:
        context["error"] = exc.message
        return render(request, "ui/_checks.html", _checks_context(store, context), status=422)
    return render(request, "ui/_checks.html", _checks_context(store, context))


@require_POST
@role_required(Role.OPERATOR)
def prompt_check_create(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Save a check of this prompt kind, with one or two expectations: the dry-run input
    (extraction), or the observations typed in the check form (consolidation, propagation)."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    form = CheckForm(request.POST, kind=kind)
    context: dict[str, Any] = {"agent_id": agent_id, "kind": kind, "scope": scope}
    status = 200
    if form.is_valid():
        data = form.cleaned_data
        expectations = [
            {"type": data[f"expect_{n}"], "value": data[f"value_{n}"]}
            for n in (1, 2)
            if data.get(f"expect_{n}")
        ]
        conversation = request.POST.get("conversation", "")
        user_name = request.POST.get("user_name", "")
        try:
            session_id = (request.POST.get("session") or "").strip()[:200]
            if session_id and not conversation.strip():
                # The session picked is the conversation the dry run used: save that.
                conversation, named = session_conversation(
                    store=store, agent_id=agent_id, session_id=session_id
                )
                user_name = named or user_name
            do_prompt_check_create(
                store=store,
                actor=actor(request),
                agent_id=agent_id,
                name=data["check_name"],
                conversation=conversation,
                user_name=user_name,
                expectations=expectations,
                scope_id=scope.id if scope and scope.scope_type == "individual" else None,
                kind=kind,
            )
        except MemoryServiceError as exc:
            context["error"] = exc.message
            status = 422
        else:
            context["saved"] = data["check_name"]
    else:
        context["error"] = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        status = 422
    return render(request, "ui/_checks.html", _checks_context(store, context), status=status)


@require_POST
@role_required(Role.OPERATOR)
def prompt_check_delete(
    request: HttpRequest, agent_id: str, kind: str, check_id: str
) -> HttpResponse:
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    context: dict[str, Any] = {"agent_id": agent_id, "kind": kind, "scope": scope}
    try:
        do_prompt_check_delete(
            store=store, actor=actor(request), agent_id=agent_id, check_id=check_id
        )
    except MemoryServiceError as exc:
        context["error"] = exc.message
    return render(request, "ui/_checks.html", _checks_context(store, context))


def _checks_context(store: MemoryStore, context: dict[str, Any]) -> dict[str, Any]:
    kind = context.get("kind", "extraction")
    context["checks"] = [
        c for c in check_list(store=store, agent_id=context["agent_id"]) if c.kind == kind
    ]
    context["can_edit"] = True
    return context
