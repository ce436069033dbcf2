"""Every view checks its role on the server (roles themselves: `memory_admin/accounts/roles.py`).

A hidden button is not a permission, so pages declare the least role they need
with `role_required` and the layout only mirrors what the server enforces.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from memory_admin.accounts.roles import Role, user_role

View = Callable[..., HttpResponse]

_CACHE_ATTR = "_ui_role"

__all__ = ["Role", "request_role", "role_required", "user_role"]


def request_role(request: HttpRequest) -> Role | None:
    """`user_role` of the request's user, looked up once per request (views and layout both ask)."""
    if not hasattr(request, _CACHE_ATTR):
        setattr(request, _CACHE_ATTR, user_role(getattr(request, "user", None)))
    return getattr(request, _CACHE_ATTR)


def role_required(minimum: Role) -> Callable[[View], View]:
    """Let the view run only for users holding `minimum` or more; others get the 403 page.

    Anonymous users never get here: the login middleware redirects them first.
    Raising `PermissionDenied` hands rendering to Django's 403 handler, which
    uses `templates/403.html` with the normal layout and status 403.
    """

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            role = request_role(request)
            if role is None or role < minimum:
                raise PermissionDenied(f"This page needs the {minimum.label} role or higher.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
