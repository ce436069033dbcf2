"""Lift a forgotten user's erasure tombstone (admins, with a reason; the action audits)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from memory_admin.stores import get_store
from memory_admin.ui.audit import MAX_ID, _user_url
from memory_admin.ui.common import actor
from memory_admin.ui.roles import Role, role_required
from streams.actions.privacy import do_tombstone_lift
from streams.core.exceptions import InvalidInput, NotFound


@require_POST
@role_required(Role.ADMIN)
def tombstone_lift_view(request: HttpRequest) -> HttpResponse:
    """POST → redirect → GET to the Users page, with the outcome as a message."""
    agent_id = (request.POST.get("agent") or "").strip()[:MAX_ID]
    user_id = (request.POST.get("user") or "").strip()[:MAX_ID]
    if not agent_id or not user_id:
        return redirect("ui:user_audit")
    try:
        do_tombstone_lift(
            store=get_store(),
            actor=actor(request),
            agent_id=agent_id,
            user_id=user_id,
            reason=request.POST.get("reason") or "",
        )
        messages.success(request, f"The erasure tombstone of {user_id} is lifted.")
    except (InvalidInput, NotFound) as exc:
        messages.error(request, exc.message)
    return redirect(_user_url(agent_id, user_id))
