"""The review queue: what waits for a person in an agent's shared memory, oldest first.

Per agent, or per scope (`?scope=`); each item shows its reasons, its text with the
flagged spans highlighted, its source scope and session, and for a candidate the groups
that support it. Approve, edit then approve, reject with a note, or decide a selection:
each through the one review action (`streams.actions.review`), POST → redirect → GET.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from memory_admin.stores import get_store
from memory_admin.ui.common import actor, flash_error, found, param
from memory_admin.ui.htmx import render_page
from memory_admin.ui.review_decided import decided_rows
from memory_admin.ui.roles import Role, request_role, role_required
from streams.actions.review import do_review_decide, do_review_decide_bulk
from streams.core.documents import Observation, Scope
from streams.core.exceptions import InvalidInput, MemoryServiceError
from streams.core.flag_kinds import flag_label
from streams.guard.review import (
    MAX_BULK,
    MAX_NOTE_CHARS,
    review_counts,
    review_counts_for_agents,
    review_queue,
)
from streams.memory.observations import observation_get
from streams.memory.scopes import scope_get
from streams.selectors import agents_page, scopes_by_ids

PAGE_SIZE = 25
AGENT_CHOICES = 100


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("reject", "Reject"), ("supersede", "Supersede older")]
    )
    content = forms.CharField(required=False, max_length=4000)
    note = forms.CharField(required=False, max_length=MAX_NOTE_CHARS)
    next = forms.CharField(required=False, max_length=1000)


class BulkForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    note = forms.CharField(required=False, max_length=MAX_NOTE_CHARS)
    next = forms.CharField(required=False, max_length=1000)


def highlighted(observation: Observation) -> list[dict[str, Any]]:
    """The content as segments, each flagged span marked with its flag (overlaps merged)."""
    text = observation.content
    spans = sorted(
        (int(s["start"]), int(s["end"]), str(s["flag"]))
        for s in observation.flag_spans
        if 0 <= int(s.get("start", -1)) < int(s.get("end", -1)) <= len(text)
    )
    segments: list[dict[str, Any]] = []
    position = 0
    for start, end, flag in spans:
        if start < position:
            continue
        if start > position:
            segments.append({"text": text[position:start], "flag": None})
        segments.append({"text": text[start:end], "flag": flag, "label": flag_label(flag)})
        position = end
    if position < len(text):
        segments.append({"text": text[position:], "flag": None})
    return segments


ALL_AGENTS = "all"


@require_GET
@role_required(Role.VIEWER)
def review_page(request: HttpRequest) -> HttpResponse:
    store = get_store()
    scope: Scope | None = None
    scope_id = param(request, "scope")
    if scope_id:
        scope = found(scope_get, store=store, scope_id=scope_id)
    agents = agents_page(store=store, limit=AGENT_CHOICES)
    agent_id = scope.agent_id if scope else (param(request, "agent") or None)
    if agent_id is None and agents:
        agent_id = agents[0].id
    every = agent_id == ALL_AGENTS and scope is None
    agent_ids = [a.id for a in agents] if every else [agent_id] if agent_id else []
    status = param(request, "status") or "in_review"
    reason = param(request, "reason")
    error = None
    rows: list[dict[str, Any]] = []
    next_cursor = None
    if agent_ids:
        try:
            rows, next_cursor = _rows(request, store, agent_ids, scope, status, reason)
        except InvalidInput as exc:
            error = exc.message
    query = {
        k: v
        for k, v in (
            ("agent", agent_id),
            ("scope", scope_id),
            ("status", status),
            ("reason", reason),
        )
        if v
    }
    here = reverse("ui:review") + ("?" + urlencode(query) if query else "")
    role = request_role(request)
    context = {
        "agents": agents,
        "agent_id": agent_id,
        "all_agents": every,
        "scope": scope,
        "status": status,
        "reason": reason,
        "error": error,
        "counts": _counts(store, agent_ids, scope_id, every),
        "rows": rows,
        "next_url": here + ("&" if query else "?") + urlencode({"cursor": next_cursor})
        if next_cursor
        else None,
        "here": here,
        "can_decide": role is not None and role >= Role.OPERATOR,
        "max_bulk": MAX_BULK,
    }
    return render_page(
        request, page="ui/review.html", partial="ui/_review_list.html", context=context
    )


def _rows(
    request: HttpRequest,
    store: Any,
    agent_ids: list[str],
    scope: Scope | None,
    status: str,
    reason: str | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """The decided list, or the queue's rows (one agent, one scope or all agents)."""
    cursor = param(request, "cursor")
    if status == "decided":
        return decided_rows(store=store, agent_ids=agent_ids, cursor=cursor, limit=PAGE_SIZE)
    page = review_queue(
        store=store,
        agent_id=agent_ids[0] if len(agent_ids) == 1 else agent_ids,
        status=status,  # type: ignore[arg-type]
        scope_id=scope.id if scope else None,
        reason=reason,
        cursor=cursor,
        limit=PAGE_SIZE,
    )
    scopes = {
        s.id: s for s in scopes_by_ids(store=store, scope_ids=[o.scope_id for o in page.items])
    }
    return [
        {
            "observation": o,
            "segments": highlighted(o),
            "scope": scopes.get(o.scope_id),
            "flag_labels": [flag_label(f) for f in o.flags],
        }
        for o in page.items
    ], page.next_cursor


def _counts(store: Any, agent_ids: list[str], scope_id: str | None, every: bool) -> dict[str, int]:
    if not agent_ids:
        return {}
    if every:
        return review_counts_for_agents(store=store, agent_ids=agent_ids)
    return review_counts(store=store, agent_id=agent_ids[0], scope_id=scope_id)


@require_POST
@role_required(Role.OPERATOR)
def review_decide_view(request: HttpRequest, observation_id: str) -> HttpResponse:
    store = get_store()
    observation = found(observation_get, store=store, observation_id=observation_id)
    form = DecisionForm(request.POST)
    back = _back(request, observation)
    if not form.is_valid():
        messages.error(request, "The decision was not taken: the form was incomplete.")
        return redirect(back)
    data = form.cleaned_data
    content = (data["content"] or "").strip() or None
    if content == observation.content:
        content = None
    try:
        decided = do_review_decide(
            store=store,
            actor=actor(request),
            observation=observation,
            decision=data["decision"],
            content=content if data["decision"] == "approve" else None,
            note=data["note"] or None,
        )
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        messages.success(
            request,
            "Approved: it is pending and supersedes the older observation it contradicts."
            if data["decision"] == "supersede"
            else "Approved: it is pending and joins the next consolidation."
            if decided.status == "pending"
            else "Rejected: it is kept for the audit and used nowhere.",
        )
    return redirect(back)


@require_POST
@role_required(Role.OPERATOR)
def review_bulk_view(request: HttpRequest, agent_id: str) -> HttpResponse:
    store = get_store()
    form = BulkForm(request.POST)
    ids = request.POST.getlist("ids")[: MAX_BULK + 1]
    back = _safe(request, request.POST.get("next")) or reverse("ui:review")
    if not form.is_valid() or not ids:
        messages.error(request, "Select at least one observation and a decision.")
        return redirect(back)
    try:
        result = do_review_decide_bulk(
            store=store,
            actor=actor(request),
            agent_id=agent_id,
            ids=ids,
            decision=form.cleaned_data["decision"],
            note=form.cleaned_data["note"] or None,
        )
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        done = result.approved or result.rejected
        verb = "Approved" if result.approved else "Rejected"
        skipped = (
            f" {len(result.skipped)} skipped (decided already or not found)."
            if result.skipped
            else ""
        )
        messages.success(request, f"{verb} {done}.{skipped}")
    return redirect(back)


def _back(request: HttpRequest, observation: Observation) -> str:
    return _safe(request, request.POST.get("next")) or (
        reverse("ui:review") + "?" + urlencode({"agent": observation.agent_id})
    )


def _safe(request: HttpRequest, url: str | None) -> str | None:
    if (
        url
        and url.startswith("/")
        and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()})
    ):
        return url
    return None
