"""The context log on the Users and session pages: what each context call gave the agent."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from memory_admin.ui.common import param
from streams.context_log import context_calls_page
from streams.exceptions import InvalidInput
from streams.pagination import Page
from streams.store import MemoryStore

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
    return {
        "context_calls": page,
        "context_calls_error": error,
        "calls_cursor": cursor,
        "calls_base": base_url,
        "context_log_days": store.context_log_days,
    }
