"""Roles are Django groups (viewer < operator < admin): what a user may do, for every interface.

Kept with the accounts (which grant them) so the account actions need no UI module;
the UI's `role_required` checks them per page (`memory_admin/ui/roles.py`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


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
