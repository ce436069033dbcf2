"""Roles are Django groups (viewer < operator < admin); every view checks its own on the server.

A hidden button is not a permission, so pages declare the least role they need
with `role_required` and the layout only mirrors what the server enforces.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

View = Callable[..., HttpResponse]

_CACHE_ATTR = "_ui_role"


class Role(IntEnum):
    """Ordered so that `role >= Role.OPERATOR` reads as "operator or more"."""

    VIEWER = 1
    OPERATOR = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


def user_role(user: Any) -> Role | None:
    """The highest role among the user's groups; superusers are admins; anyone else has none."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return Role.ADMIN
    names = set(user.groups.values_list("name", flat=True))
    held = [role for role in Role if role.label in names]
    return max(held) if held else None


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
