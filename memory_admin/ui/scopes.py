"""Scope browser and scope detail: the consolidation, its history, and consolidate now.

Observation actions live in `observations.py`. Every read goes through the same
services the API uses; every write is POST → redirect → GET (htmx swaps follow
the redirect and get the partial they asked for).

Long because: the scope browser and the scope detail's forms (consolidation edit, consolidate
now, settings) share the detail's context.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_admin.integrations.llm import consolidation_estimate_shown
from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.all_agents import ALL_AGENTS, agents_chosen
from memory_admin.ui.common import actor, flash_error, form_errors, found, param
from memory_admin.ui.flagged import flagged_context
from memory_admin.ui.forms import ConsolidationEditForm, ScopeFilterForm, ScopeSettingsForm
from memory_admin.ui.htmx import render_page, wants_partial
from memory_admin.ui.limits import scope_limits_changes, scope_limits_form
from memory_admin.ui.observations import observation_log_context
from memory_admin.ui.questions import coverage_marks, questions_context
from memory_admin.ui.ranking import ranking_context
from memory_admin.ui.roles import Role, request_role, role_required
from memory_admin.ui.usage import scope_usage_context
from streams.actions.consolidations import do_consolidation_trigger
from streams.actions.pins import do_consolidation_edit_and_pin, do_scope_pins_set
from streams.actions.scopes import do_consolidation_edit, do_scope_update
from streams.core.documents import Scope
from streams.core.exceptions import Conflict, InvalidInput, MemoryServiceError
from streams.core.pagination import Page
from streams.core.scope_limits import KIND_DEFAULT_FIELDS
from streams.guard.review import review_counts
from streams.guard.screening import Flagged
from streams.memory.consolidation import consolidation_history, restore_preview
from streams.memory.consolidation_age import consolidate_after_days, kind_default_days
from streams.memory.pins import sentences
from streams.memory.scopes import scope_get, scope_list
from streams.prompts import prompt_role, resolve_for_scope
from streams.selectors import (
    agents_page,
    job_find,
    observations_by_ids,
    scope_active_job,
    shard_find,
)

PAGE_SIZE = 25
AGENT_CHOICES = 100
PENDING_SHOWN = 20
HISTORY_SHOWN = 10


# -- scope browser ----------------------------------------------------------------------


@require_GET
@role_required(Role.VIEWER)
def scope_browser(request: HttpRequest) -> HttpResponse:
    """An agent's scopes with filters; htmx swaps only `_scope_table.html`."""
    store = get_store()
    form = ScopeFilterForm(request.GET or None)
    filters: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    agents = agents_page(store=store, limit=AGENT_CHOICES)
    agent_id, agent_ids = agents_chosen(
        store, agents, filters.get("agent") or param(request, "agent")
    )
    page: Page[Scope] = Page(items=[], next_cursor=None)
    error = None if form.is_valid() or not request.GET else "Some filters were not valid."
    try:
        if agent_id == ALL_AGENTS:
            page = _all_agents_page(store, agent_ids=agent_ids, filters=filters)
        elif agent_id:
            page = _scope_page(
                store, agent_id=agent_id, filters=filters, cursor=param(request, "cursor")
            )
    except InvalidInput as exc:
        error = exc.message
    context = {
        "form": form,
        "agents": agents,
        "agent_id": agent_id,
        "all_agents": agent_id == ALL_AGENTS,
        "page": page,
        "error": error,
        "query": _query_without(request, "cursor"),
        "cursor": param(request, "cursor"),
    }
    return render_page(
        request, page="ui/scopes.html", partial="ui/_scope_table.html", context=context
    )


def _scope_page(
    store: MemoryStore, *, agent_id: str, filters: dict[str, Any], cursor: str | None
) -> Page[Scope]:
    shard = filters.get("shard")
    if shard:
        # A shard is named uniquely within its agent: the identity index finds it directly.
        scope = shard_find(store=store, agent_id=agent_id, name=shard)
        return Page(items=[scope] if scope else [], next_cursor=None)
    text = filters.get("q") or None
    in_consolidation = filters.get("within") == "consolidation"
    return scope_list(
        store=store,
        agent_id=agent_id,
        scope_type=filters.get("type") or None,
        user_id=filters.get("user") or None,
        group_id=filters.get("group") or None,
        text=None if in_consolidation else text,
        consolidation_text=text if in_consolidation else None,
        oldest_first=filters.get("sort") == "oldest",
        cursor=cursor,
        limit=PAGE_SIZE,
    )


def _all_agents_page(
    store: MemoryStore, *, agent_ids: list[str], filters: dict[str, Any]
) -> Page[Scope]:
    """The newest (or oldest) scopes across agents: each agent's first page, merged by
    creation time, one page long. Each agent's list pages by its own sequence, so there
    is no next page here: the page says to pick an agent to read further."""
    merged: list[Scope] = []
    for agent_id in agent_ids:
        merged.extend(_scope_page(store, agent_id=agent_id, filters=filters, cursor=None).items)
    oldest = filters.get("sort") == "oldest"
    merged.sort(key=lambda s: s.created_at, reverse=not oldest)
    return Page(items=merged[:PAGE_SIZE], next_cursor=None)


def _query_without(request: HttpRequest, *names: str) -> str:
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


# -- scope detail -----------------------------------------------------------------------


@require_GET
@role_required(Role.VIEWER)
def scope_detail(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Everything about one scope; htmx swaps the observation log for filters and pages."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    log = observation_log_context(request, store=store, scope=scope)
    if wants_partial(request):
        context = {"scope": scope, "can_edit": can_edit(request), **log}
        response = render(request, "ui/_observation_log.html", context)
        response["Vary"] = "HX-Request"
        return response
    job_id = param(request, "job")
    job = None
    if job_id:
        job = job_find(store=store, job_id=job_id)
    if job is None:
        job = scope_active_job(store=store, scope=scope, kind="consolidation")
    if job is None and scope.pending_observation_ids:
        # A consolidation answer the checks refused: the page says why pending stays.
        failed = scope_active_job(
            store=store, scope=scope, kind="consolidation", statuses=["failed"]
        )
        if failed is not None and failed.result.get("outcome") == "refused":
            job = failed
    context = {
        "scope": scope,
        "job": job if job and job.scope_id == scope.id else None,
        "job_active": job is not None and job.status in ("queued", "running"),
        **_pending(store, scope),
        "prompts": _prompts_in_effect(store, scope),
        "settings_form": _settings_form(scope),
        **ranking_context(store, scope),
        "limits_form": scope_limits_form(store, scope),
        "can_edit": can_edit(request),
        **history_context(store, scope),
        **scope_usage_context(store, scope),
        "review": review_counts(store=store, scope_id=scope.id),
        **log,
    }
    return render(request, "ui/scope_detail.html", context)


def _pending(store: MemoryStore, scope: Scope) -> dict[str, Any]:
    """The newest pending observations (a bounded `_id` list) and how many more there are."""
    ids = scope.pending_observation_ids[-PENDING_SHOWN:]
    pending = observations_by_ids(store=store, observation_ids=ids)
    return {
        "pending": list(reversed(pending)),
        "pending_more": max(0, scope.pending_count - PENDING_SHOWN),
        # Consolidation by age: a run also starts once a pending one waited this long.
        "age_days": consolidate_after_days(store=store, scope=scope),
    }


def can_edit(request: HttpRequest) -> bool:
    role = request_role(request)
    return role is not None and role >= Role.OPERATOR


def _prompts_in_effect(store: MemoryStore, scope: Scope) -> list[dict[str, Any]]:
    """One row per text the resolver says a call involving this scope sends (or drops)."""
    rows: list[dict[str, Any]] = []
    for kind, resolved in resolve_for_scope(store=store, scope=scope).items():
        if resolved is None:
            rows.append({"kind": kind, "part": None})
            continue
        for part in resolved.parts:
            # A template saved on this scope (or a guidance level) is edited here; a group's
            # extraction template is whoever is talking's, edited on the agent.
            here = part.role == "guidance" or prompt_role(kind, scope) == "template"
            rows.append({"kind": kind, "part": part, "edit_here": here})
    return rows


def _settings_form(scope: Scope, data: Any = None) -> ScopeSettingsForm:
    initial = {
        "is_active": scope.is_active,
        "consolidation_threshold": scope.consolidation_threshold,
        "consolidation_max_words": scope.consolidation_max_words,
        "max_observations": scope.max_observations,
        "consolidate_after_days": scope.consolidate_after_days,
        "review_mode": scope.review_mode,
    }
    form = ScopeSettingsForm(data, initial=initial)
    default = kind_default_days(store=get_store(), scope=scope)
    form.fields["consolidate_after_days"].help_text = (
        "Pending observations older than this are consolidated below the threshold. "
        f"Empty: the {scope.kind} default ({default or 'off'}"
        f"{' days' if default else ''}); 0: never by age."
    )
    return form


REBUILD_SHOWN = ["queued", "running", "failed"]


def _drops(fidelity: dict[str, list[str]] | None) -> int:
    found = fidelity or {}
    return len(found.get("unstated_observation_ids") or []) + len(
        found.get("dropped_sentences") or []
    )


def history_context(store: MemoryStore, scope: Scope) -> dict[str, Any]:
    versions = consolidation_history(store=store, scope=scope, limit=HISTORY_SHOWN).items
    rebuild = None
    if scope.needs_rebuild:
        rebuild = scope_active_job(store=store, scope=scope, kind="rebuild", statuses=REBUILD_SHOWN)
    return {
        "versions": versions,
        "history_more": scope.consolidation_version > HISTORY_SHOWN,
        "returning": restore_preview(versions, scope.pending_observation_ids),
        # "drops N facts" per version: what its text no longer states (issue 38).
        "drops": {v.version: _drops(v.fidelity) for v in versions},
        # Question coverage per version, a lost answer marked (issue 38, item 2).
        "coverage": coverage_marks(versions),
        **questions_context(store, scope),
        "rebuild_job": rebuild,
        # Sentences of the current text an operator can pin (those not pinned yet).
        "pin_choices": [s for s in sentences(scope.consolidation or "") if s not in scope.pins],
    }


@require_POST
@role_required(Role.OPERATOR)
def scope_pin(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Pin a sentence (`pin`) or unpin one (`unpin`); every later version holds the pins."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    pin, unpin = request.POST.get("pin"), request.POST.get("unpin")
    if pin:
        pins = [*scope.pins, pin]
    elif unpin is not None:
        pins = [p for p in scope.pins if p != unpin]
    else:
        messages.error(request, "Name a sentence to pin or unpin.")
        return redirect("ui:scope_detail", scope_id=scope.id)
    override = bool(pin) and "save_anyway" in request.POST
    try:
        do_scope_pins_set(
            store=store, actor=actor(request), scope=scope, pins=pins, override=override
        )
    except Flagged as exc:  # a shared scope: the operator looks, then may confirm
        context = {"scope": scope, "pin": pin, "flagged": flagged_context(pin or "", exc)}
        return render(request, "ui/pin_flagged.html", context, status=422)
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        messages.success(
            request,
            "Pinned: every later version holds it word for word." if pin else "Unpinned.",
        )
    return redirect("ui:scope_detail", scope_id=scope.id)


@require_GET
@role_required(Role.VIEWER)
def scope_consolidation(request: HttpRequest, scope_id: str) -> HttpResponse:
    """The consolidation panel alone: refreshed when a job finishes (htmx), or a full page."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    if wants_partial(request) and request.GET.get("part") == "pending":
        return render(request, "ui/_pending.html", {"scope": scope, **_pending(store, scope)})
    if wants_partial(request) and request.GET.get("part") == "usage":
        context = {"scope": scope, **scope_usage_context(store, scope)}
        return render(request, "ui/_scope_usage.html", context)
    if wants_partial(request) and request.GET.get("part") == "estimate":
        # Loaded after the page: it reads every pending observation (5,000 take seconds).
        estimate = consolidation_estimate_shown(scope)
        context = {"scope": scope, "estimate": estimate, "loaded": True}
        return render(request, "ui/_consolidation_estimate.html", context)
    if wants_partial(request) and request.GET.get("part") == "head":
        # The header's counts and the "Consolidate now" button follow a finished job too.
        active = scope_active_job(store=store, scope=scope, kind="consolidation")
        context = {"scope": scope, "can_edit": can_edit(request), "job_active": bool(active)}
        return render(request, "ui/_scope_head.html", context)
    context = {"scope": scope, "can_edit": can_edit(request), **history_context(store, scope)}
    if wants_partial(request):
        return render(request, "ui/_consolidation.html", context)
    return redirect("ui:scope_detail", scope_id=scope.id)


@require_http_methods(["GET", "POST"])
@role_required(Role.OPERATOR)
def consolidation_edit_view(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Edit the text by hand; if it moved on meanwhile, say so and show the new text."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    if request.method == "POST":
        form = ConsolidationEditForm(request.POST)
        if form.is_valid():
            try:
                save = (
                    do_consolidation_edit_and_pin
                    if "and_pin" in request.POST
                    else (do_consolidation_edit)
                )
                edited = save(
                    store=store,
                    actor=actor(request),
                    scope=scope,
                    text=form.cleaned_data["text"],
                    expected_version=form.cleaned_data["expected_version"],
                    override="save_anyway" in request.POST,
                )
            except Conflict:
                messages.error(
                    request,
                    f"Not saved: the consolidation moved on to version "
                    f"{scope.consolidation_version} while you were editing. Your text is "
                    "below; compare it with the current one and save again.",
                )
                form = ConsolidationEditForm(
                    {
                        "text": form.cleaned_data["text"],
                        "expected_version": scope.consolidation_version,
                    }
                )
                _count_words(form, scope)
                context = {"scope": scope, "form": form, "conflict": True}
                return render(request, "ui/consolidation_edit.html", context, status=409)
            except Flagged as exc:  # a shared scope: shown marked, "Save anyway" confirms
                flagged = flagged_context(form.cleaned_data["text"], exc)
                _count_words(form, scope)
                context = {
                    "scope": scope,
                    "form": form,
                    "flagged": flagged,
                    "and_pin": "and_pin" in request.POST,
                }
                return render(request, "ui/consolidation_edit.html", context, status=422)
            except InvalidInput as exc:
                form_errors(form, exc, default_field="text")
            else:
                version = edited.consolidation_version
                messages.success(request, f"Saved the consolidation as version {version}.")
                return redirect("ui:scope_detail", scope_id=scope.id)
    else:
        form = ConsolidationEditForm(
            initial={
                "text": scope.consolidation or "",
                "expected_version": scope.consolidation_version,
            }
        )
    _count_words(form, scope)
    status = 422 if request.method == "POST" else 200  # a POST that gets here was refused
    return render(
        request, "ui/consolidation_edit.html", {"scope": scope, "form": form}, status=status
    )


def _count_words(form: ConsolidationEditForm, scope: Scope) -> None:
    """The editor's live word count (static/js/word-count.js) against the scope's limit."""
    form.fields["text"].widget.attrs.update(
        {"data-word-limit": str(scope.consolidation_max_words), "data-word-counter": "word-count"}
    )


@require_POST
@role_required(Role.OPERATOR)
def consolidate_now(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Queue a consolidation run; the page then follows the job live (htmx polling)."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    try:
        job = do_consolidation_trigger(store=store, actor=actor(request), scope=scope)
    except Conflict as exc:
        flash_error(request, exc)
        return redirect("ui:scope_detail", scope_id=scope.id)
    if wants_partial(request):
        return redirect(reverse("ui:job_status", args=[job.id]))
    messages.success(request, "Consolidation queued; this page follows the job.")
    return redirect(f"{reverse('ui:scope_detail', args=[scope.id])}?job={job.id}")


@require_POST
@role_required(Role.OPERATOR)
def scope_settings(request: HttpRequest, scope_id: str) -> HttpResponse:
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    form = _settings_form(scope, request.POST)
    limits_form = scope_limits_form(store, scope, request.POST)
    if form.is_valid() and limits_form.is_valid():
        changes = {
            k: v
            for k, v in form.cleaned_data.items()
            if k in form.changed_data and not (k == "review_mode" and not v)
        }
        changes.update(scope_limits_changes(limits_form))
        try:
            do_scope_update(store=store, actor=actor(request), scope=scope, changes=changes)
        except InvalidInput as exc:
            form_errors(limits_form if _names_limit(exc) else form, exc)
        else:
            messages.success(
                request, "Settings saved." if changes else "Nothing changed in the settings."
            )
            return redirect("ui:scope_detail", scope_id=scope.id)
    messages.error(request, "The settings were not saved: see the errors below.")
    context = {"scope": scope, "settings_form": form, "limits_form": limits_form}
    return render(request, "ui/scope_settings.html", context, status=422)


def _names_limit(exc: InvalidInput) -> bool:
    details = exc.details if isinstance(exc.details, list) else []
    return any(isinstance(d, dict) and d.get("field") in KIND_DEFAULT_FIELDS for d in details)
