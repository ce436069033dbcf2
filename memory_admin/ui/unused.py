"""Unused memory and bulk undo in the UI: the report of observations no context or search
retrieved in N days (per scope, each linking to the bulk page with that filter), and the
Undo button of a finished bulk job (within MEMORY_BULK_UNDO_SECONDS)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, flash_error, found, param
from memory_admin.ui.roles import Role, role_required
from streams.actions.bulk import do_bulk_undo
from streams.core.documents import Job
from streams.core.exceptions import Conflict, InvalidInput
from streams.memory.bulk import UNUSED_DAYS_RANGE
from streams.memory.bulk_undo import bulk_undo_state
from streams.memory.unused import DEFAULT_UNUSED_DAYS, unused_report
from streams.selectors import agent_get

REPORT_PAGE = 50


class UnusedForm(forms.Form):
    days = forms.IntegerField(
        min_value=UNUSED_DAYS_RANGE[0], max_value=UNUSED_DAYS_RANGE[1], required=False
    )


@require_GET
@role_required(Role.VIEWER)
def unused_report_page(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Per scope of the agent: how many observations were not retrieved in N days."""
    store = get_store()
    agent = found(agent_get, store=store, agent_id=agent_id)
    form = UnusedForm(request.GET or None)
    days = DEFAULT_UNUSED_DAYS
    error = None
    if form.is_bound and not form.is_valid():
        error = " ".join(str(e) for e in form.errors.get("days", ["invalid"]))
    elif form.is_bound and form.cleaned_data.get("days"):
        days = form.cleaned_data["days"]
    page = unused_report(
        store=store, agent_id=agent.id, days=days, cursor=param(request, "cursor"),
        limit=REPORT_PAGE,
    )  # fmt: skip
    context = {
        "agent": agent,
        "days": days,
        "rows": page.items,
        "next_cursor": page.next_cursor,
        "error": error,
        "total": sum(r.unused for r in page.items),
    }
    return render(request, "ui/unused.html", context, status=422 if error else 200)


def bulk_undo_context(store: MemoryStore, job: Job) -> dict[str, Any]:
    """The job page's Undo block: until when, or which job undid it."""
    until, undone_by = bulk_undo_state(store=store, job=job)
    return {"undo_until": until, "undone_by": undone_by}


@require_POST
@role_required(Role.OPERATOR)
def bulk_undo_view(request: HttpRequest, job_id: str) -> HttpResponse:
    """Undo a finished bulk job: the undo job's page; 404 for no such bulk job; the bulk
    job's page saying why not (undone already, too late, not finished)."""
    try:
        undo = found(do_bulk_undo, store=get_store(), actor=actor(request), bulk_job_id=job_id)
    except (Conflict, InvalidInput) as exc:
        flash_error(request, exc)
        return redirect("ui:job_detail", job_id=job_id)
    messages.success(request, "Undo started: the bulk action is taken back batch by batch.")
    return redirect("ui:job_detail", job_id=undo.id)
