"""A session's page: its messages (who said what, which observations cite), and every call
through the chat endpoint, with the memory it was given.

"Why did the agent say that?": per call, the context injected (its XML and size in
tokens), whether retrieval fired and why, the observations it retrieved, how the
upstream answered, and the job that ingested the turn.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory_admin.stores import get_store
from memory_admin.ui.common import param
from memory_admin.ui.context_log import context_calls_context
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from streams.context.chat import chat_session_page
from streams.core.exceptions import InvalidInput
from streams.core.pagination import Page
from streams.selectors import session_messages

PAGE_SIZE = 20
MESSAGES_SHOWN = 100


@require_GET
@role_required(Role.VIEWER)
def session_detail(request: HttpRequest, agent_id: str, session_id: str) -> HttpResponse:
    cursor = param(request, "cursor")
    store = get_store()
    error = None
    try:
        page = chat_session_page(
            store=store,
            agent_id=agent_id[:128],
            session_id=session_id[:128],
            cursor=cursor,
            limit=PAGE_SIZE,
        )
    except InvalidInput as exc:
        error, page = exc.message, Page(items=[], next_cursor=None)
    context = {
        "agent_id": agent_id,
        "session_id": session_id,
        "page": page,
        "cursor": cursor,
        "error": error,
        "said": session_messages(
            store=get_store(),
            agent_id=agent_id[:128],
            session_id=session_id[:128],
            limit=MESSAGES_SHOWN,
        ),
        "messages_shown": MESSAGES_SHOWN,
    }
    here = reverse("ui:session_detail", args=[agent_id, session_id])
    context.update(
        context_calls_context(
            request,
            store=store,
            agent_id=agent_id[:128],
            session_id=session_id[:128],
            base_url=f"{here}?{urlencode({'view': 'calls'})}",
        )
    )
    partial = "ui/_context_calls.html" if param(request, "part") == "context_calls" else None
    return render_page(
        request,
        page="ui/session_detail.html",
        partial=partial or "ui/_chat_calls.html",
        context=context,
    )
