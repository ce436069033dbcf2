"""A scope's observation log on its detail page, and the operator's edits to it:
correct, mark private, delete (behind a confirmation), add by hand."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, counted, flash_error, form_errors, found, param
from memory_admin.ui.forms import ObservationFilterForm, ObservationForm
from memory_admin.ui.htmx import wants_partial
from memory_admin.ui.roles import Role, request_role, role_required
from streams.actions.observations import (
    do_observation_add,
    do_observation_delete,
    do_observation_merge,
    do_observation_update,
)
from streams.actions.supersession import do_observation_unsupersede
from streams.core.documents import Job, Observation, Scope
from streams.core.exceptions import InvalidInput, MemoryServiceError, Refused
from streams.memory.observations import observation_get, observation_list
from streams.memory.provenance import cited_lines
from streams.memory.scopes import scope_get
from streams.memory.supersession import replaced_on_page
from streams.memory.text_history import observation_history

LOG_PAGE_SIZE = 25


def observation_log_context(
    request: HttpRequest, *, store: MemoryStore, scope: Scope
) -> dict[str, Any]:
    """The log's filters and one page of it, for the detail page and its htmx partial."""
    form = ObservationFilterForm(request.GET or None)
    filters: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    private = {"yes": True, "no": False}.get(filters.get("private") or "")
    error = None
    try:
        page = observation_list(
            store=store,
            scope=scope,
            status=filters.get("status") or "all",
            include_deleted=bool(filters.get("deleted")),
            private=private,
            text=filters.get("text") or None,
            cursor=param(request, "cursor"),
            limit=LOG_PAGE_SIZE,
            include_superseded=bool(filters.get("superseded")),
            unused_days=filters.get("unused_days") or None,
        )
    except InvalidInput as exc:
        error = exc.message
        page = observation_list(
            store=store, scope=scope, limit=LOG_PAGE_SIZE, include_superseded=False
        )
    query = request.GET.copy()
    query.pop("cursor", None)
    query.pop("job", None)
    return {
        "log_form": form,
        "log_page": page,
        "cited": cited_lines(store=store, observations=page.items),
        "replaced": replaced_on_page(store=store, observations=page.items),
        "is_admin": _is_admin(request),
        "log_error": error,
        "log_query": query.urlencode(),
        "log_cursor": param(request, "cursor"),
    }


def _is_admin(request: HttpRequest) -> bool:
    role = request_role(request)
    return role is not None and role >= Role.ADMIN


def _observation(store: MemoryStore, observation_id: str) -> tuple[Observation, Scope]:
    observation = found(observation_get, store=store, observation_id=observation_id)
    scope = found(scope_get, store=store, scope_id=observation.scope_id)
    return observation, scope


def _back(scope: Scope) -> str:
    return reverse("ui:scope_detail", args=[scope.id]) + "#observation-log"


@require_POST
@role_required(Role.OPERATOR)
def observation_create(request: HttpRequest, scope_id: str) -> HttpResponse:
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    form = ObservationForm(request.POST)
    if form.is_valid():
        try:
            do_observation_add(
                store=store,
                actor=actor(request),
                scope=scope,
                content=form.cleaned_data["content"],
                private=form.cleaned_data["private"],
            )
        except (InvalidInput, Refused) as exc:  # Refused: a forgotten user (`forgotten`)
            form_errors(form, exc, default_field="content")
        else:
            messages.success(request, "Observation added; it waits for the next consolidation.")
            return redirect(_back(scope))
    messages.error(request, "The observation was not added: see the error below.")
    return render(request, "ui/observation_form.html", {"scope": scope, "form": form}, status=422)


def _from_user(request: HttpRequest) -> bool:
    """The inline edit was opened on the Users page (its rows differ from the scope's)."""
    return (request.POST.get("from") or request.GET.get("from")) == "user"


def _row_template(from_user: bool) -> str:
    return "ui/_user_observation_row.html" if from_user else "ui/_observation_row.html"


def _saved_message(jobs: list[Job]) -> str:
    text = "Observation saved."
    if jobs:
        text += (
            f" Rebuild pending: {counted(len(jobs), 'consolidation')} that held the old text"
            f" {pluralize(len(jobs), 'is,are')} being rebuilt with the correction."
        )
    return text


def _saved_inline(
    request: HttpRequest, *, observation: Observation, scope: Scope, jobs: list[Job]
) -> HttpResponse:
    """The saved row, the message (out of band, into `#flash`) and, on the scope page, the
    rebuild job's live banner; `observation-saved` refreshes the consolidation panel (the
    scope page's, the Users page's), which shows "rebuild pending" and follows the
    rebuild. Not `scope-changed`: that reloads the log too, and the saved row with it."""
    from_user = _from_user(request)
    messages.success(request, _saved_message(jobs))
    job = None
    if jobs and not from_user:
        job = next((j for j in jobs if j.scope_id == scope.id), jobs[0])
    context = {
        "o": observation,
        "scope": scope,
        "can_edit": True,
        "just_saved": True,
        "row_template": _row_template(from_user),
        "job": job,
        "cited": cited_lines(store=get_store(), observations=[observation]),
        "is_admin": _is_admin(request),
    }
    response = render(request, "ui/_observation_saved.html", context)
    response["HX-Trigger"] = "observation-saved"
    return response


@require_http_methods(["GET", "POST"])
@role_required(Role.OPERATOR)
def observation_edit(request: HttpRequest, observation_id: str) -> HttpResponse:
    """Correct an observation: inline (htmx swaps the row for the form) or as a page."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    if request.method == "POST":
        form = ObservationForm(request.POST)
        if form.is_valid():
            try:
                fresh, jobs = do_observation_update(
                    store=store,
                    actor=actor(request),
                    observation=observation,
                    content=form.cleaned_data["content"],
                    private=form.cleaned_data["private"],
                )
            except InvalidInput as exc:
                form_errors(form, exc, default_field="content")
            except MemoryServiceError as exc:
                flash_error(request, exc)
                return redirect(_back(scope))
            else:
                wanted = form.cleaned_data["content"].strip()
                if wanted != observation.content and fresh.content == observation.content:
                    # A shared scope's screen held the new text (`review.edit_of`).
                    messages.warning(
                        request,
                        "The new text holds personal data or an instruction: it waits in "
                        "the review queue, and the old text stays until a person decides.",
                    )
                if wants_partial(request):
                    return _saved_inline(request, observation=fresh, scope=scope, jobs=jobs)
                messages.success(request, _saved_message(jobs))
                return redirect(_back(scope))
    else:
        form = ObservationForm(
            initial={"content": observation.content, "private": observation.private}
        )
    context = {"scope": scope, "form": form, "o": observation, "from_user": _from_user(request)}
    template = "ui/_observation_edit.html" if wants_partial(request) else "ui/observation_form.html"
    status = 422 if request.method == "POST" else 200
    return render(request, template, context, status=status)


@require_http_methods(["GET"])
@role_required(Role.VIEWER)
def observation_row(request: HttpRequest, observation_id: str) -> HttpResponse:
    """One row of the log (what "Cancel" on an inline edit swaps back)."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    role = request_role(request)
    can_edit = role is not None and role >= Role.OPERATOR
    return render(
        request,
        _row_template(_from_user(request)),
        {
            "o": observation,
            "scope": scope,
            "can_edit": can_edit,
            "cited": cited_lines(store=store, observations=[observation]),
            "is_admin": _is_admin(request),
        },
    )


@require_POST
@role_required(Role.OPERATOR)
def observation_privacy(request: HttpRequest, observation_id: str) -> HttpResponse:
    """Toggle private: a private observation never propagates beyond its scope."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    private = request.POST.get("private") == "true"
    try:
        _, jobs = do_observation_update(
            store=store, actor=actor(request), observation=observation, private=private
        )
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        note = " Consolidations that held it are being rebuilt without it." if jobs else ""
        messages.success(
            request,
            ("Marked private." + note) if private else "No longer private: it may propagate.",
        )
    return redirect(_back(scope))


@require_http_methods(["GET", "POST"])
@role_required(Role.OPERATOR)
def observation_remove(request: HttpRequest, observation_id: str) -> HttpResponse:
    """Soft delete behind a confirmation page (GET shows it, POST does it)."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    if request.method == "POST":
        reason = (request.POST.get("reason") or "").strip()[:500] or None
        jobs = do_observation_delete(
            store=store, actor=actor(request), observation=observation, reason=reason
        )
        messages.success(request, _deleted_message(jobs))
        return redirect(_back(scope))
    return render(request, "ui/observation_delete.html", {"scope": scope, "o": observation})


@require_POST
@role_required(Role.OPERATOR)
def observation_merge(request: HttpRequest, observation_id: str) -> HttpResponse:
    """Merge a near duplicate with the one it resembles: POST `keep` names the one kept."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    if not observation.similar_to:
        messages.error(request, "This observation is not marked similar to another.")
        return redirect(_back(scope))
    other, _ = _observation(store, observation.similar_to)
    keep_other = request.POST.get("keep") == other.id
    keep, drop = (other, observation) if keep_other else (observation, other)
    try:
        jobs = do_observation_merge(store=store, actor=actor(request), keep=keep, drop=drop)
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        note = " The consolidation that held it is being rebuilt." if jobs else ""
        messages.success(request, f"Merged: kept “{keep.content}”, deleted the other.{note}")
    return redirect(_back(scope))


@require_POST
@role_required(Role.OPERATOR)
def observation_unsupersede(request: HttpRequest, observation_id: str) -> HttpResponse:
    """Undo a wrong supersession: the observation is current again (audited)."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    try:
        do_observation_unsupersede(store=store, actor=actor(request), observation=observation)
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, f"“{observation.content}” is current again.")
    return redirect(_back(scope))


@require_http_methods(["GET"])
@role_required(Role.ADMIN)
def observation_text_history(request: HttpRequest, observation_id: str) -> HttpResponse:
    """The earlier texts of an observation (admins: they may hold what an edit removed)."""
    store = get_store()
    observation, scope = _observation(store, observation_id)
    try:
        history = observation_history(
            store=store, observation=observation, cursor=param(request, "cursor")
        )
    except InvalidInput:
        history = observation_history(store=store, observation=observation)
    context = {"o": observation, "scope": scope, "history": history}
    return render(request, "ui/observation_history.html", context)


def _deleted_message(jobs: list[Job]) -> str:
    text = "Observation deleted: it is kept for the audit, out of every context."
    if jobs:
        text += (
            f" {counted(len(jobs), 'consolidation')} that held it"
            f" {pluralize(len(jobs), 'is,are')} being rebuilt without it."
        )
    return text
