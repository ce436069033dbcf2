"""Jobs: recent background work with status, duration, LLM calls and errors; retry a
failed one; and the live status partial that scope pages poll."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from memory_admin.stores import get_store
from memory_admin.templatetags.labelled import labelled
from memory_admin.ui.common import actor, flash_error, found, param
from memory_admin.ui.forms import JobFilterForm
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, request_role, role_required
from memory_admin.ui.unused import bulk_undo_context
from streams.actions.jobs import do_job_retry
from streams.core.documents import Job, Scope
from streams.core.exceptions import Conflict, InvalidInput
from streams.core.pagination import Page
from streams.jobs import job_get, job_list
from streams.selectors import scopes_by_ids

PAGE_SIZE = 25
POLL_SECONDS = 1
MAX_NAMED_SCOPES = 20  # per job: a formation names the few scopes it wrote to


@require_GET
@role_required(Role.VIEWER)
def job_index(request: HttpRequest) -> HttpResponse:
    form = JobFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    error = None
    try:
        page = job_list(
            store=get_store(),
            status=filters.get("status") or None,
            agent_id=filters.get("agent") or None,
            cursor=param(request, "cursor"),
            limit=PAGE_SIZE,
        )
    except InvalidInput as exc:
        error, page = exc.message, Page(items=[], next_cursor=None)
    query = request.GET.copy()
    query.pop("cursor", None)
    role = request_role(request)
    scope_ids = sorted({i for job in page.items for i in _scope_ids(job)})
    scopes = {s.id: s for s in scopes_by_ids(store=get_store(), scope_ids=scope_ids)}
    context = {
        "form": form,
        "page": page,
        # Each job's scope by name (the user's, group's or shard's), not by id, and the
        # scopes its result names too.
        "scopes": scopes,
        "results": {job.id: _named_result(job, scopes) for job in page.items},
        "error": error,
        "query": query.urlencode(),
        "cursor": param(request, "cursor"),
        "can_edit": role is not None and role >= Role.OPERATOR,
    }
    return render_page(request, page="ui/jobs.html", partial="ui/_job_table.html", context=context)


def _scope_ids(job: Job) -> list[str]:
    """The scope ids a job is about: its own, and those its result names."""
    result = job.result or {}
    found = [job.scope_id] if job.scope_id else []
    if isinstance(result.get("scope_id"), str):
        found.append(result["scope_id"])
    if isinstance(result.get("scopes"), dict):
        found += [k for k in result["scopes"] if isinstance(k, str)]
    for rebuilt in result.get("reconsolidated_scopes") or []:
        if isinstance(rebuilt, dict) and isinstance(rebuilt.get("scope_id"), str):
            found.append(rebuilt["scope_id"])
    return found[:MAX_NAMED_SCOPES]


def _named_result(job: Job, scopes: dict[str, Scope]) -> list[tuple[str, str]]:
    """The result as labelled rows, each scope id written as the scope's name."""
    rows = labelled(job.result)
    for scope_id in _scope_ids(job):
        scope = scopes.get(scope_id)
        if scope is not None:
            name = f"{scope.label} ({'shard' if scope.is_shard else scope.scope_type})"
            rows = [(label, text.replace(scope_id, name)) for label, text in rows]
    return rows


@require_GET
@role_required(Role.VIEWER)
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    """One job: what it was asked to do, by whom, how it went, its result as labelled values."""
    job = found(job_get, store=get_store(), job_id=job_id)
    role = request_role(request)
    context = {
        "job": job,
        "active": job.status in ("queued", "running"),
        "can_edit": role is not None and role >= Role.OPERATOR,
        **bulk_undo_context(get_store(), job),
    }
    return render(request, "ui/job_detail.html", context)


@require_GET
@role_required(Role.VIEWER)
def job_status(request: HttpRequest, job_id: str) -> HttpResponse:
    """The job's status box; it polls itself until the job is done, then tells the page
    (`HX-Trigger: scope-changed`) so the consolidation and its history refresh."""
    job = found(job_get, store=get_store(), job_id=job_id)
    active = job.status in ("queued", "running")
    response = render(
        request, "ui/_job_status.html", {"job": job, "active": active, "poll": POLL_SECONDS}
    )
    if not active:
        response["HX-Trigger"] = "scope-changed"
    return response


@require_POST
@role_required(Role.OPERATOR)
def job_retry_view(request: HttpRequest, job_id: str) -> HttpResponse:
    store = get_store()
    job = found(job_get, store=store, job_id=job_id)
    try:
        job = do_job_retry(store=store, actor=actor(request), job_id=job.id)
    except Conflict as exc:
        flash_error(request, exc)
    else:
        messages.success(request, f"The {job.kind} job was queued again.")
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect(reverse("ui:jobs"))
