"""Actions on people (staff accounts and their roles) and API keys, each audited once.

People, roles (Django groups) and API keys live in Django's SQL database, so these
are Django-side actions rather than `streams/` services; like the domain's actions
they take the actor, do the write and record the one audit entry themselves, so the
pages, the management commands and the tests cannot record them differently.
The actor is the domain's `Actor` (`ui:<username>`, `api:<key name>` or `cli`).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from memory_admin.accounts.roles import Role, user_role
from memory_admin.models import PERMISSIONS, ApiKey, PasswordChangeRequired
from memory_admin.stores import get_store
from streams.actions import Actor
from streams.actions.agents import do_agent_create, unknown_agents
from streams.actions.base import record
from streams.core.exceptions import Conflict, InvalidInput

ROLE_NAMES = tuple(role.label for role in Role)
MAX_AGENT_ID_CHARS = 128
MAX_KEY_AGENTS = 50


def _audit(actor: Actor, action: str, object_type: str, object_id: str, **summary: Any) -> None:
    record(
        store=get_store(),
        actor=actor,
        action=action,
        object_type=object_type,
        object_id=object_id,
        summary=summary,
    )


def _check_role(role: str) -> str:
    if role not in ROLE_NAMES:
        raise InvalidInput(
            f"role must be one of {', '.join(ROLE_NAMES)}", details=[{"field": "role"}]
        )
    return role


def role_of(user: Any) -> str | None:
    """The user's role label, ignoring whether the account is active."""
    if user.is_superuser:
        return Role.ADMIN.label
    names = set(user.groups.values_list("name", flat=True))
    held = [r for r in Role if r.label in names]
    return max(held).label if held else None


def _active_admin_count() -> int:
    users = get_user_model().objects.filter(is_active=True)
    return (
        users.filter(is_superuser=True).count()
        + users.filter(is_superuser=False, groups__name=Role.ADMIN.label).distinct().count()
    )


def _would_remove_last_admin(user: Any) -> bool:
    return user_role(user) == Role.ADMIN and _active_admin_count() <= 1


def new_password() -> str:
    """A one-time password to hand over; the person changes it (or an admin resets it)."""
    return secrets.token_urlsafe(12)


def user_create(
    *, actor: Actor, username: str, role: str, email: str = "", password: str | None = None
) -> tuple[Any, str]:
    """Create a staff account in one role; returns it and its password (shown once)."""
    username = username.strip()
    _check_role(role)
    model = get_user_model()
    if not username or len(username) > 150:
        raise InvalidInput("a username is 1 to 150 characters", details=[{"field": "username"}])
    if model.objects.filter(username=username).exists():
        raise Conflict(f"a person named {username!r} exists already")
    password = password or new_password()
    with transaction.atomic():
        user = model.objects.create_user(username=username, email=email.strip(), password=password)
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        # Someone else chose this password: its owner must choose their own at first sign-in.
        PasswordChangeRequired.objects.create(user=user)
    _audit(actor, "user.create", "user", username, role=role)
    return user, password


def user_password_changed(*, actor: Actor, user: Any) -> None:
    """After a person changed their own password: the one-time flag goes; audited."""
    required = PasswordChangeRequired.objects.filter(user_id=user.pk).delete()[0] > 0
    _audit(actor, "user.password", "user", user.get_username(), was_one_time=required)


def user_set_role(*, actor: Actor, user: Any, role: str) -> None:
    """Move a person to exactly one role; the last active admin cannot be demoted."""
    _check_role(role)
    before = role_of(user)
    if before == role:
        return
    if user.is_superuser:
        # Django superusers are admins whatever their groups: say so rather than pretend.
        raise Conflict(f"{user.get_username()} is a Django superuser and always an admin")
    if role != Role.ADMIN.label and _would_remove_last_admin(user):
        raise Conflict("this is the last active admin: make someone else admin first")
    with transaction.atomic():
        user.groups.remove(*Group.objects.filter(name__in=ROLE_NAMES))
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    _audit(actor, "user.role", "user", user.get_username(), before=before, after=role)


def user_set_active(*, actor: Actor, user: Any, active: bool) -> None:
    """Deactivate (sign-in refused, sessions end at the next request) or reactivate."""
    if user.is_active == active:
        return
    if not active and _would_remove_last_admin(user):
        raise Conflict("this is the last active admin: make someone else admin first")
    type(user).objects.filter(pk=user.pk).update(is_active=active)
    user.is_active = active
    verb = "user.reactivate" if active else "user.deactivate"
    _audit(actor, verb, "user", user.get_username())


def user_unlock(*, actor: Actor, user: Any) -> int:
    """Lift the sign-in lockouts of this name (every address); how many were lifted."""
    from axes.utils import reset

    lifted = reset(username=user.get_username())
    _audit(actor, "user.unlock", "user", user.get_username(), lockouts=lifted)
    return lifted


def api_key_create(
    *,
    actor: Actor,
    name: str,
    agent_ids: list[str],
    permissions: list[str] | None = None,
    create_agents: bool = False,
) -> tuple[ApiKey, str]:
    """Create a key bound to `agent_ids` (none: an admin key, every agent and every
    permission); the raw key is returned once. `permissions` limits an agent-bound key
    (None: read, write and forget); naming some for an admin key is refused rather
    than silently ignored. An agent the store does not know is refused (a typo would
    make a key for an empty agent) unless `create_agents` asks to create it."""
    name = name.strip()
    if not name or len(name) > 100:
        raise InvalidInput("a key name is 1 to 100 characters", details=[{"field": "name"}])
    agents = sorted({a.strip() for a in agent_ids if a.strip()})
    if len(agents) > MAX_KEY_AGENTS or any(len(a) > MAX_AGENT_ID_CHARS for a in agents):
        raise InvalidInput(
            f"at most {MAX_KEY_AGENTS} agent ids of up to {MAX_AGENT_ID_CHARS} characters",
            details=[{"field": "agents"}],
        )
    if permissions is not None:
        unknown = sorted(set(permissions) - set(PERMISSIONS))
        if unknown:
            raise InvalidInput(
                f"unknown permission {unknown[0]!r}: pick from {', '.join(PERMISSIONS)}",
                details=[{"field": "permissions"}],
            )
        if not permissions:
            raise InvalidInput("pick at least one permission", details=[{"field": "permissions"}])
        if not agents and set(permissions) != set(PERMISSIONS):
            raise InvalidInput(
                "a key for every agent is an admin key and has every permission: "
                "name agents to limit a key's permissions",
                details=[{"field": "permissions"}],
            )
    if ApiKey.objects.filter(name=name).exists():
        raise Conflict(f"an API key named {name!r} exists already")
    store = get_store()
    unknown = unknown_agents(store=store, agent_ids=agents)
    if unknown and not create_agents:
        raise InvalidInput(
            f"no agent {unknown[0]!r}: create it first (manage.py create_agent "
            f"{unknown[0]}) or ask for it to be created with the key",
            details=[{"field": "agents", "unknown": unknown}],
        )
    for agent_id in unknown:
        do_agent_create(store=store, actor=actor, agent_id=agent_id)
    key, raw = ApiKey.generate(name=name, agent_ids=agents, permissions=permissions)
    _audit(
        actor,
        "apikey.create",
        "apikey",
        key.name,
        agent_ids=list(key.agent_ids),
        permissions=list(key.granted),
    )
    return key, raw


def api_key_revoke(*, actor: Actor, key: ApiKey) -> bool:
    """Revoke at once (the next request answers 401); False when it was revoked already."""
    changed = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if not changed:
        return False
    key.refresh_from_db()
    _audit(actor, "apikey.revoke", "apikey", key.name)
    return True
