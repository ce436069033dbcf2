"""An agent's webhooks and the delivery log of each (created and changed through the API)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.stores import get_store
from memory_admin.ui.common import param
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.pagination import Page
from streams.records.webhooks import webhook_deliveries_page, webhook_get, webhooks_page

PAGE_SIZE = 20


@require_GET
@role_required(Role.VIEWER)
def webhook_list(request: HttpRequest, agent_id: str) -> HttpResponse:
    """The agent's hooks (never their secrets); `?hook=` shows one hook's delivery log."""
    store = get_store()
    agent_id = agent_id[:128]
    error = None
    hooks = webhooks_page(store=store, agent_id=agent_id, cursor=None, limit=50)
    selected = None
    deliveries: Page[dict[str, Any]] = Page(items=[], next_cursor=None)
    hook_id = param(request, "hook")
    if hook_id:
        try:
            hook = webhook_get(store=store, webhook_id=hook_id)
            if hook["agent_id"] != agent_id:
                raise NotFound("webhook not found")
            selected = hook
            deliveries = webhook_deliveries_page(
                store=store, hook=hook, cursor=param(request, "cursor"), limit=PAGE_SIZE
            )
        except (NotFound, InvalidInput) as exc:
            error = exc.message
    context = {
        "agent_id": agent_id,
        "hooks": hooks.items,
        "selected": selected,
        "deliveries": deliveries,
        "cursor": param(request, "cursor"),
        "error": error,
    }
    return render_page(
        request, page="ui/webhooks.html", partial="ui/_webhook_deliveries.html", context=context
    )
