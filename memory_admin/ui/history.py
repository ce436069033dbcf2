"""A scope's consolidation history: any two versions side by side, and restore."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from memory_admin.stores import get_store
from memory_admin.ui.common import actor, counted, flash_error, found, param
from memory_admin.ui.diff import side_by_side
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from memory_admin.ui.scopes import can_edit, history_context
from streams.actions.consolidations import do_consolidation_restore
from streams.core.exceptions import MemoryServiceError, NotFound
from streams.memory.consolidation import restore_returns
from streams.memory.scopes import scope_get
from streams.selectors import consolidation_version


@require_GET
@role_required(Role.VIEWER)
def consolidation_compare(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Two versions side by side (`?a=3&b=5`; default: the two newest)."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    newest = scope.consolidation_version
    a = _int_param(request, "a", default=max(newest - 1, 0))
    b = _int_param(request, "b", default=newest)
    old = consolidation_version(store=store, scope=scope, version=a) if a else None
    new = consolidation_version(store=store, scope=scope, version=b) if b else None
    missing = [v for v, doc in ((a, old), (b, new)) if v and doc is None]
    context = {
        "scope": scope,
        "a": a,
        "b": b,
        "old": old,
        "new": new,
        "missing": missing,
        "diff": side_by_side(old.text if old else "", new.text if new else ""),
        "can_edit": can_edit(request),
        **history_context(store, scope),
    }
    return render_page(
        request, page="ui/consolidation_compare.html", partial="ui/_diff.html", context=context
    )


def _int_param(request: HttpRequest, name: str, *, default: int) -> int:
    value = param(request, name)
    if value is None or not value.isdigit() or len(value) > 12:
        return default
    return int(value)


@require_POST
@role_required(Role.OPERATOR)
def consolidation_restore_view(request: HttpRequest, scope_id: str, version: int) -> HttpResponse:
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    try:
        returning = restore_returns(store=store, scope=scope, version=version)
        entry = do_consolidation_restore(
            store=store, actor=actor(request), scope=scope, version=version
        )
    except NotFound:
        messages.error(request, f"There is no version {version} to restore.")
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        back = (
            f" {counted(len(returning), 'observation')} absorbed after v{version}"
            " went back to pending."
            if returning
            else ""
        )
        messages.success(request, f"Restored version {version} as version {entry.version}.{back}")
    return redirect("ui:scope_detail", scope_id=scope.id)
