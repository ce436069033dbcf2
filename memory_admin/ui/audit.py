"""The audit log page, the user audit ("what do you remember about me, and why?"), its
JSON export, and "forget this user" behind a typed confirmation (admins only)."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from memory_admin.stores import get_store
from memory_admin.ui.all_agents import ALL_AGENTS, agents_chosen
from memory_admin.ui.common import actor, param
from memory_admin.ui.context_log import context_calls_context
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, request_role, role_required
from streams.actions.exchange import do_user_export_document
from streams.actions.privacy import do_user_forget
from streams.core.documents import Job, Observation, Scope
from streams.core.documents_audit import AuditEntry
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.pagination import Page
from streams.guard.erasure import tombstone_get
from streams.jobs import job_get
from streams.memory.observations import observation_list
from streams.memory.provenance import cited_lines
from streams.people.export import export_filename, export_json, export_markdown
from streams.people.user_audit import user_audit
from streams.people.user_find import user_find
from streams.records.audit import audit_page
from streams.selectors import agents_page, observations_by_ids, scopes_by_ids

PAGE_SIZE = 25
AGENT_CHOICES = 200
MAX_ID = 128
# The deletion receipt's rows: what each count of a forget_user job's result means.
RECEIPT_LABELS = {
    "memory_scopes": "individual memory deleted",
    "memory_observations": "observations deleted (own, and from this user in shared memories)",
    "memory_consolidations": "consolidation versions deleted (the individual memory's history)",
    "memory_messages": "conversation messages deleted",
    "memory_session_buffers": "session buffers emptied of this user",
    "memory_chat_calls": "recorded chat calls deleted",
    "memory_context_calls": "logged context calls of this user deleted",
    "memory_webhook_deliveries": "webhook deliveries of these observations withdrawn",
    "memory_user_names": "findable names deleted",
    "memory_jobs": "jobs naming this user purged (or, still waiting, reduced to ids)",
    "memory_questions": "questions this user's memory was set to answer deleted",
    "memory_corrections": "support corrections about this user deleted (and checks made from them)",
    "memory_prompt_experiments": "prompt experiment inputs about this user erased (counts kept)",
}
REDACTED_LABEL = "versions of group and collective memories redacted (kept, text replaced)"


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=200)
    object = forms.CharField(required=False, max_length=200)
    action = forms.CharField(required=False, max_length=100)
    agent = forms.CharField(required=False, max_length=MAX_ID)


class UserPickForm(forms.Form):
    agent = forms.CharField(max_length=MAX_ID)
    user = forms.CharField(max_length=MAX_ID)


class ForgetForm(forms.Form):
    confirm = forms.CharField(max_length=MAX_ID, label="Type the user id to confirm")

    def __init__(self, *args: Any, user_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user_id = user_id

    def clean_confirm(self) -> str:
        typed = self.cleaned_data["confirm"].strip()
        if typed != self.user_id:
            raise forms.ValidationError("That is not the user id: nothing was forgotten.")
        return typed


# -- the audit log ----------------------------------------------------------------------


@require_GET
@role_required(Role.VIEWER)
def audit_log(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    error = None
    try:
        page = audit_page(
            store=get_store(),
            actor=filters.get("actor") or None,
            object_id=filters.get("object") or None,
            action=filters.get("action") or None,
            agent_id=filters.get("agent") or None,
            cursor=param(request, "cursor"),
            limit=PAGE_SIZE,
        )
    except InvalidInput as exc:
        error, page = exc.message, Page(items=[], next_cursor=None)
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {
        "form": form,
        "page": page,
        "rows": _rows(page.items),
        "error": error,
        "query": query.urlencode(),
        "cursor": param(request, "cursor"),
    }
    return render_page(
        request, page="ui/audit_log.html", partial="ui/_audit_table.html", context=context
    )


SCOPE_OBJECTS = ("scope", "consolidation")
OBJECT_ID = re.compile(r"[0-9a-f]{24}")


def _rows(entries: list[AuditEntry]) -> list[dict[str, Any]]:
    """The page's entries, each scope named, and each observation by its scope's name (one
    read for the page's observations, one for their scopes)."""
    store = get_store()
    observation_ids = sorted(
        {
            e.object_id
            for e in entries
            if e.object_type == "observation" and e.object_id and OBJECT_ID.fullmatch(e.object_id)
        }
    )
    observations = {
        o.id: o for o in observations_by_ids(store=store, observation_ids=observation_ids)
    }
    ids = {e.object_id for e in entries if e.object_type in SCOPE_OBJECTS and e.object_id}
    ids |= {o.scope_id for o in observations.values()}
    scopes = {s.id: s for s in scopes_by_ids(store=store, scope_ids=sorted(ids))}
    return [_row(entry, scopes, observations) for entry in entries]


def _scope_name(scope: Scope) -> str:
    return f"{scope.label} ({'shard' if scope.is_shard else scope.scope_type})"


def _row(
    entry: AuditEntry, scopes: dict[str, Scope], observations: dict[str, Observation]
) -> dict[str, Any]:
    """An entry as the table shows it: a link to the object where it has a page, and the
    object's name where it has one (an observation: the scope it is in)."""
    link = name = None
    if entry.object_id and entry.object_type in SCOPE_OBJECTS:
        link = reverse("ui:scope_detail", args=[entry.object_id])
        scope = scopes.get(entry.object_id)
        if scope is not None:
            name = _scope_name(scope)
    elif entry.object_id and entry.object_type == "observation":
        observation = observations.get(entry.object_id)
        scope = scopes.get(observation.scope_id) if observation else None
        if observation is not None and scope is not None:
            link = reverse("ui:scope_detail", args=[scope.id]) + f"#obs-{observation.id}"
            name = f"in {_scope_name(scope)}"
    elif entry.object_id and entry.object_type == "user" and entry.agent_id:
        link = _user_url(entry.agent_id, entry.object_id)
    elif entry.object_id and entry.object_type == "session" and entry.agent_id:
        link = reverse("ui:session_detail", args=[entry.agent_id, entry.object_id])
    summary = "; ".join(f"{key}: {_short(value)}" for key, value in sorted(entry.summary.items()))
    return {"entry": entry, "link": link, "name": name, "summary": summary}


def _short(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"before", "after"}:
        return f"{_short(value['before'])} → {_short(value['after'])}"
    if isinstance(value, dict) and "sha256" in value:
        return f"#{value['sha256'] or '-'} ({value.get('length', 0)} chars)"
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:79] + "…"


# -- the user audit ---------------------------------------------------------------------


def _picked(request: HttpRequest) -> tuple[UserPickForm, str | None, str | None]:
    form = UserPickForm(request.GET if request.GET.get("user") else None)
    if form.is_valid():
        return form, form.cleaned_data["agent"].strip(), form.cleaned_data["user"].strip()
    return form, None, None


def _user_url(agent_id: str, user_id: str, **extra: str) -> str:
    return f"{reverse('ui:user_audit')}?{urlencode({'agent': agent_id, 'user': user_id, **extra})}"


@require_GET
@role_required(Role.VIEWER)
def user_audit_view(request: HttpRequest) -> HttpResponse:
    """Everything remembered about one user of one agent; parts page by themselves (htmx)."""
    store = get_store()
    form, agent_id, user_id = _picked(request)
    role = request_role(request)
    context: dict[str, Any] = {
        "form": form,
        "agents": agents_page(store=store, limit=AGENT_CHOICES),
        "agent_id": agent_id or param(request, "agent"),
        "user_id": user_id,
        "is_admin": role is not None and role >= Role.ADMIN,
        "error": None,
    }
    if agent_id and user_id:
        try:
            context.update(_user_context(request, store, agent_id, user_id))
        except InvalidInput as exc:
            context["error"] = exc.message
    context.update(_find_context(request, store, context))
    part = param(request, "part")
    partial = {
        "observations": "ui/_user_observations.html",
        "related": "ui/_user_related.html",
        "main": "ui/_user_main.html",
        "memory": "ui/_user_memory.html",
        "context_calls": "ui/_context_calls.html",
    }.get(part or "", "ui/_user_observations.html")
    return render_page(request, page="ui/user_audit.html", partial=partial, context=context)


def _find_context(request: HttpRequest, store: Any, context: dict[str, Any]) -> dict[str, Any]:
    """ "Find a user" by the start of a name or id, in one agent or all; an unknown exact id
    gets the same search as suggestions instead of an empty audit with Export and Forget."""
    text = param(request, "q")
    in_agent = param(request, "in") or None
    if in_agent == ALL_AGENTS:
        in_agent = None
    elif in_agent:  # an agent that is none is the 404 page, not an empty find
        agents_chosen(store, context["agents"], in_agent)
    if (
        text is None
        and context.get("audit") is not None
        and not context.get("known")
        and not context.get("receipt_job")  # forgotten on purpose: the receipt says so
    ):
        text, in_agent = context["user_id"], None
    if text is None:
        return {"find_text": None, "in_agent": in_agent}
    try:
        matches = user_find(store=store, text=text, agent_id=in_agent)
        error = None
    except InvalidInput as exc:
        matches, error = [], exc.message
    rows = [{"m": m, "url": _user_url(m.agent_id, m.user_id)} for m in matches]
    return {"find_text": text, "in_agent": in_agent, "matches": rows, "find_error": error}


def _user_context(request: HttpRequest, store: Any, agent_id: str, user_id: str) -> dict[str, Any]:
    found = user_audit(
        store=store,
        agent_id=agent_id,
        user_id=user_id,
        related_cursor=param(request, "rel_cursor"),
        related_limit=PAGE_SIZE,
    )
    observations: Page[Observation] = Page(items=[], next_cursor=None)
    if found.individual is not None:
        observations = observation_list(
            store=store,
            scope=found.individual,
            include_deleted=True,
            cursor=param(request, "obs_cursor"),
            limit=PAGE_SIZE,
        )
    receipt_job = _receipt_job(request, store, agent_id)
    return {
        "tombstone": tombstone_get(store=store, agent_id=agent_id, user_id=user_id),
        "audit": found,
        # An id nothing is remembered about: say so, and offer nothing to export or forget.
        "known": found.individual is not None or bool(found.related.items),
        "related_rows": [
            {"o": o, "scope": found.scopes.get(o.scope_id)} for o in found.related.items
        ],
        "observations": observations,
        "cited": cited_lines(store=store, observations=[*observations.items, *found.related.items]),
        "obs_cursor": param(request, "obs_cursor"),
        "rel_cursor": param(request, "rel_cursor"),
        "base_query": urlencode({"agent": agent_id, "user": user_id}),
        "receipt_job": receipt_job,
        # While the forget job runs, the page's main part refreshes itself (htmx polling).
        "receipt_active": receipt_job is not None and receipt_job.status in ("queued", "running"),
        "receipt_poll_url": receipt_job
        and _user_url(agent_id, user_id, job=receipt_job.id, part="main"),
        "receipt_rows": _receipt_rows(receipt_job),
        "can_pause": (request_role(request) or Role.VIEWER) >= Role.OPERATOR,
        # Operators correct an observation right here (inline edit), as on the scope page.
        "can_edit": (request_role(request) or Role.VIEWER) >= Role.OPERATOR,
        **context_calls_context(
            request,
            store=store,
            agent_id=agent_id,
            user_id=user_id,
            base_url=_user_url(agent_id, user_id),
        ),
    }


def _receipt_job(request: HttpRequest, store: Any, agent_id: str) -> Job | None:
    """The forget job named in `?job=`, to show its receipt after the redirect."""
    job_id = param(request, "job")
    if not job_id:
        return None
    try:
        job = job_get(store=store, job_id=job_id)
    except NotFound:
        return None
    return job if job.kind == "forget_user" and job.agent_id == agent_id else None


def _receipt_rows(job: Job | None) -> list[dict[str, Any]]:
    """The receipt's counts, each with a label that says what was counted."""
    if job is None or job.status != "succeeded":
        return []
    result = job.result or {}
    rows = [
        {"key": key, "label": RECEIPT_LABELS.get(key, key), "count": count}
        for key, count in (result.get("deleted") or {}).items()
    ]
    rows.append(
        {
            "key": "redacted_versions",
            "label": REDACTED_LABEL,
            "count": result.get("redacted_versions", 0),
        }
    )
    return rows


@require_GET
@role_required(Role.VIEWER)
def user_export_view(request: HttpRequest) -> HttpResponse:
    """The API's export document (JSON, or as Markdown), as a download of the same bytes,
    so that the import (the API's or the Import page) takes it back; reading someone's
    whole memory is itself audited."""
    form, agent_id, user_id = _picked(request)
    if not (agent_id and user_id):
        return redirect("ui:user_audit")
    fmt = "markdown" if request.GET.get("format") == "markdown" else "json"
    try:
        document = do_user_export_document(
            store=get_store(), actor=actor(request), agent_id=agent_id, user_id=user_id
        )
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("ui:user_audit")
    if fmt == "markdown":
        response = HttpResponse(
            export_markdown(document), content_type="text/markdown; charset=utf-8"
        )
    else:
        response = HttpResponse(export_json(document), content_type="application/json")
    name = export_filename(f"{agent_id}-{user_id}", fmt)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def user_forget_view(request: HttpRequest) -> HttpResponse:
    """The confirmation page (GET) and the forgetting itself (POST → redirect → GET)."""
    agent_id = (request.POST.get("agent") or request.GET.get("agent") or "").strip()[:MAX_ID]
    user_id = (request.POST.get("user") or request.GET.get("user") or "").strip()[:MAX_ID]
    if not agent_id or not user_id:
        return redirect("ui:user_audit")
    store = get_store()
    form = ForgetForm(request.POST or None, user_id=user_id)
    if request.method == "POST" and form.is_valid():
        job = do_user_forget(store=store, actor=actor(request), agent_id=agent_id, user_id=user_id)
        messages.success(
            request,
            f"Forgetting user {user_id} of {agent_id}: the receipt below lists what was removed.",
        )
        return redirect(_user_url(agent_id, user_id, job=job.id))
    found = user_audit(store=store, agent_id=agent_id, user_id=user_id, related_limit=5)
    context = {"form": form, "agent_id": agent_id, "user_id": user_id, "audit": found}
    return render(request, "ui/user_forget.html", context, status=422 if form.errors else 200)
