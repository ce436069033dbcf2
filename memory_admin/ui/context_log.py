"""The context log on the Users and session pages: what each context call gave the agent."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import found, param
from memory_admin.ui.diff import side_by_side
from memory_admin.ui.roles import Role, role_required
from streams.context.assemble import context_assemble
from streams.context.log import context_call_get, context_calls_page
from streams.context.replay import context_replay
from streams.core.exceptions import InvalidInput
from streams.core.pagination import Page

PAGE_SIZE = 20


def context_calls_context(
    request: HttpRequest,
    *,
    store: MemoryStore,
    agent_id: str,
    base_url: str,
    user_id: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """The `_context_calls.html` partial's context: one page of the calls, newest first."""
    cursor = param(request, "calls_cursor")
    error = None
    try:
        page = context_calls_page(
            store=store,
            agent_id=agent_id,
            user_id=user_id,
            session_id=session_id,
            cursor=cursor,
            limit=PAGE_SIZE,
        )
    except InvalidInput as exc:
        error, page = exc.message, Page(items=[], next_cursor=None)
    for call in page.items:
        call["replay_url"] = replay_url(call)
    return {
        "context_calls": page,
        "context_calls_error": error,
        "calls_cursor": cursor,
        "calls_base": base_url,
        "context_log_days": store.context_log_days,
    }


@require_GET
@role_required(Role.VIEWER)
def context_call_replay(request: HttpRequest, agent_id: str, call_id: str) -> HttpResponse:
    """One logged call: what was given, "as it was at" its time (replayed from history,
    without what support removed since), and a diff of that against the context now."""
    store = get_store()
    call = found(context_call_get, store=store, agent_id=agent_id[:128], call_id=call_id)
    groups = [(g, None) for g in call["group_ids"]]
    kwargs = {
        "store": store,
        "agent_id": call["agent_id"],
        "user_id": call["user_id"],
        "groups": groups,
        "message": call["message"],
        "max_tokens": call["max_tokens"],
    }
    error = None
    try:
        then = context_replay(**kwargs, as_of=call["created_at"]).xml
    except InvalidInput as exc:  # the agent's record is gone (its data was removed)
        then, error = "", exc.message
    now = context_assemble(**kwargs, log=False, record_access=False).xml
    context = {
        "call": call,
        "then": then,
        "now": now,
        "diff": side_by_side(then, now),
        "error": error,
    }
    return render(request, "ui/context_call.html", context)


def replay_url(call: dict[str, Any]) -> str:
    return reverse("ui:context_call_replay", args=[call["agent_id"], call["id"]])
