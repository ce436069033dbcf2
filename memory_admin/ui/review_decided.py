"""The Review page's "Decided" list and its Undo button (issue 40).

Decided items, newest decision first, one agent's or all agents' (one indexed range
each); a decision made less than `MEMORY_REVIEW_UNDO_SECONDS` ago shows Undo, which goes
through the one undo action (`streams.actions.review.do_review_undo`), POST → redirect.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, flash_error, found
from memory_admin.ui.roles import Role, role_required
from streams.actions.review import do_review_undo
from streams.core.exceptions import MemoryServiceError
from streams.core.pagination import Page
from streams.memory.observations import observation_get
from streams.memory.review_undo import DecidedItem, review_decided
from streams.selectors import scopes_by_ids


def decided_rows(
    *, store: MemoryStore, agent_ids: list[str], cursor: str | None, limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """The rows the `_review_decided.html` partial shows, and the next page's cursor."""
    page: Page[DecidedItem] = review_decided(
        store=store, agent_ids=agent_ids, cursor=cursor, limit=limit
    )
    scope_ids = [d.observation.scope_id for d in page.items]
    scopes = {s.id: s for s in scopes_by_ids(store=store, scope_ids=scope_ids)}
    rows = [
        {
            "observation": d.observation,
            "undo_until": d.undo_until,
            "scope": scopes.get(d.observation.scope_id),
            "decision": (d.observation.review or {}).get("decision"),
        }
        for d in page.items
    ]
    return rows, page.next_cursor


@require_POST
@role_required(Role.OPERATOR)
def review_undo_view(request: HttpRequest, observation_id: str) -> HttpResponse:
    store = get_store()
    observation = found(observation_get, store=store, observation_id=observation_id)
    try:
        do_review_undo(store=store, actor=actor(request), observation=observation)
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, "Undone: it waits for review again.")
    back = request.POST.get("next") or ""
    if not (
        back.startswith("/")
        and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()})
    ):
        back = reverse("ui:review") + "?status=decided"
    return redirect(back)
