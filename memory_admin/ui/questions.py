"""Questions memory must answer: a scope's own (scope page) and the agent's default per
scope kind (prompts page); the history and the scope page show each version's coverage."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, found
from memory_admin.ui.roles import Role, role_required
from streams.actions.prompts import do_questions_default_save
from streams.actions.scopes import do_scope_update
from streams.core.documents import ConsolidationVersion, Scope
from streams.core.exceptions import InvalidInput
from streams.memory.coverage import coverage_summary
from streams.memory.scopes import scope_get
from streams.prompts.questions import SCOPE_KINDS, questions_default, questions_in_effect


def coverage_marks(versions: list[ConsolidationVersion]) -> dict[int, dict[str, Any]]:
    """Per version: counts per status, for the History column ("answers 1 of 2", "loses")."""
    return {
        v.version: {**coverage_summary(v.coverage), "asked": len(v.coverage)}
        for v in versions
        if v.coverage
    }


def questions_context(store: MemoryStore, scope: Scope) -> dict[str, Any]:
    """The questions in effect for the scope page (one indexed read)."""
    return {"questions": questions_in_effect(store=store, scope=scope)}


def defaults_context(store: MemoryStore, agent_id: str) -> list[dict[str, Any]]:
    """Each scope kind's default questions, for the prompts page."""
    rows = []
    for kind in SCOPE_KINDS:
        entry = questions_default(store=store, agent_id=agent_id, scope_kind=kind)
        asked = [] if entry is None or entry.cleared else entry.questions
        rows.append({"kind": kind, "questions": asked, "entry": entry})
    return rows


def _lines(request: HttpRequest) -> list[str]:
    return [line for line in request.POST.get("questions", "").splitlines() if line.strip()]


@require_POST
@role_required(Role.OPERATOR)
def scope_questions(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Save the scope's own questions (one per line); empty falls back to the default."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    lines = _lines(request)
    try:
        do_scope_update(
            store=store, actor=actor(request), scope=scope, changes={"questions": lines or None}
        )
    except InvalidInput as exc:
        messages.error(request, f"Questions not saved: {exc.message}")
    else:
        messages.success(request, "Questions saved: the next consolidation answers them.")
    return redirect(reverse("ui:scope_detail", args=[scope.id]) + "#questions")


@require_POST
@role_required(Role.OPERATOR)
def agent_questions(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Save the agent's default questions for a scope kind (one per line; empty: none)."""
    if kind not in SCOPE_KINDS:
        raise Http404("no such scope kind")
    try:
        do_questions_default_save(
            store=get_store(),
            actor=actor(request),
            agent_id=agent_id,
            scope_kind=kind,
            questions=_lines(request) or None,
        )
    except InvalidInput as exc:
        messages.error(request, f"Questions for {kind} scopes not saved: {exc.message}")
    else:
        messages.success(request, f"Questions for {kind} scopes saved.")
    return redirect(reverse("ui:prompts") + f"?agent={agent_id}#questions")
