"""Corrections on the prompt editor (issue 38, item 5): the list of this prompt's
corrections (paginated, read through the visibility rule), "Make a check" (one click),
and "Suggest a change" (one model call; the draft opens in this editor, where the dry run
is one click away, and it is saved only when it passes every check, or with "Save anyway").
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import get_store
from memory_admin.ui.common import actor, flash_error, param
from memory_admin.ui.forms import DryRunForm
from memory_admin.ui.htmx import wants_partial
from memory_admin.ui.prompts import corrections_context, editor_context, level_scope, level_url
from memory_admin.ui.roles import Role, request_role, role_required
from streams.actions.corrections import do_correction_check
from streams.core.exceptions import InvalidInput, MemoryServiceError
from streams.drafts.corrections import prompt_suggest
from streams.memory.provenance import CitedLine


@require_GET
@role_required(Role.VIEWER)
def prompt_corrections(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """A page of the corrections panel (the htmx "Older" link), or the editor with it."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    cursor = param(request, "cursor")
    if wants_partial(request):
        role = request_role(request)
        context: dict[str, Any] = {"agent_id": agent_id, "kind": kind, "scope": scope}
        context |= corrections_context(store, agent_id, kind, scope, cursor)
        context["can_edit"] = role is not None and role >= Role.OPERATOR
        return render(request, "ui/_corrections.html", context)
    context = editor_context(request, store, agent_id, kind, scope)
    return render(request, "ui/prompt_edit.html", context)


@require_POST
@role_required(Role.OPERATOR)
def prompt_correction_check(
    request: HttpRequest, agent_id: str, kind: str, correction_id: str
) -> HttpResponse:
    """Make a prompt check of one correction, then back to the editor."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    try:
        check = do_correction_check(
            store=store,
            actor=actor(request),
            correction_id=correction_id,
            agent_ids=frozenset({agent_id}),
        )
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        messages.success(
            request,
            f"Made the {check.kind} check “{check.name}”: "
            + "; ".join(e.describe() for e in check.expectations)
            + ". It runs whenever this prompt is saved.",
        )
    return redirect(level_url(agent_id, kind, scope) + "#checks")


@require_POST
@role_required(Role.OPERATOR)
def prompt_suggest_view(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """One model call with this level's corrections as examples; the draft opens in the
    editor (nothing saved). A failure is shown here, and nothing changes."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    try:
        suggestion = prompt_suggest(
            store=store, llm=get_llm_provider(), agent_id=agent_id, kind=kind, scope=scope
        )
    except MemoryServiceError as exc:
        status = 422 if isinstance(exc, InvalidInput) else 503
        context = editor_context(request, store, agent_id, kind, scope)
        context["suggest_error"] = exc.message
        return render(request, "ui/prompt_edit.html", context, status=status)
    context = editor_context(request, store, agent_id, kind, scope, text=suggestion.text)
    context["suggestion"] = suggestion
    context["suggested"] = True
    cited: list[CitedLine] = next((s.lines for s in context["corrections"] if s.lines), [])
    if kind == "extraction" and cited:  # the dry run, one click away, on a corrected case
        conversation = "\n".join(f"{line.role}: {line.text}" for line in cited)
        speaker = next((line.speaker for line in cited if line.role == "user"), "User")
        context["dry_run_form"] = DryRunForm(
            initial={
                "conversation": conversation,
                "user_name": speaker,
                "scope": scope.id if scope else "",
            }
        )
    # A POST answer, not a redirect: the draft is stored nowhere (a reload asks again).
    return render(request, "ui/prompt_edit.html", context)
