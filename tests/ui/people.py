"""Users with a role, shared by the UI and browser tests (fixtures live in their conftests)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group

PASSWORD = "correct horse battery staple"


def create_user(user_model: Any, *, username: str, role: str | None) -> Any:
    """A user in the role's group (None: no group), with `PASSWORD`.

    `get_or_create` on the group: transactional tests (the live server's) flush
    the tables, and with them the groups the migration created.
    """
    user = user_model.objects.create_user(username=username, password=PASSWORD)
    if role is not None:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user
