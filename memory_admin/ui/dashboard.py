"""The dashboard: what each agent holds, and which store and LLM provider this instance runs on."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.stores import get_store, store_mode
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from streams.documents import Agent

PAGE_SIZE = 25
MAX_CURSOR_CHARS = 200  # agent ids are short; a longer `after` is not one of ours

STORE_LABELS = {
    "embedded": "Embedded MongoDB-wire store (local development)",
    "mongodb": "MongoDB",
}


@dataclass(frozen=True)
class AgentPage:
    agents: list[Agent]
    after: str | None
    next_after: str | None


def agent_page(*, after: str | None, limit: int) -> AgentPage:
    """One page of agents in id order; one extra row is read to know whether a next page exists."""
    rows = get_store().agents.list_page(after=after, limit=limit + 1)
    agents = rows[:limit]
    next_after = agents[-1].id if len(rows) > limit else None
    return AgentPage(agents=agents, after=after, next_after=next_after)


@require_GET
@role_required(Role.VIEWER)
def dashboard(request: HttpRequest) -> HttpResponse:
    """Full page, or only `_agent_table.html` when htmx asks for the next page."""
    after = request.GET.get("after", "").strip()[:MAX_CURSOR_CHARS] or None
    mode = store_mode()
    context = {
        "page": agent_page(after=after, limit=PAGE_SIZE),
        "store_mode": mode,
        "store_label": STORE_LABELS.get(mode, mode),
        "store_database": settings.MONGODB_DB,
    }
    return render_page(
        request, page="ui/dashboard.html", partial="ui/_agent_table.html", context=context
    )
