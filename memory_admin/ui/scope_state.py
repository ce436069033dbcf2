"""Pause and resume a scope (any type): the one switch, from the scope page and the Users page."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from memory_admin.stores import get_store
from memory_admin.ui.common import actor, found
from memory_admin.ui.roles import Role, role_required
from streams.actions.scopes import do_scope_update
from streams.memory.scopes import scope_get


@require_POST
@role_required(Role.OPERATOR)
def scope_active(request: HttpRequest, scope_id: str) -> HttpResponse:
    """`active=false` pauses (nothing routed, not in context or search, not consolidated;
    the data is kept), `active=true` resumes."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    active = request.POST.get("active") == "true"
    do_scope_update(store=store, actor=actor(request), scope=scope, changes={"is_active": active})
    messages.success(
        request,
        "Memory resumed: it is routed to, consolidated, searched and in the context again."
        if active
        else "Memory paused: nothing new is routed to it, and it is out of the context and "
        "search; its data is kept.",
    )
    back = request.POST.get("next") or ""
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect("ui:scope_detail", scope_id=scope.id)
