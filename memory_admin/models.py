"""The Django-side tables: API keys (hashed). People, roles and sessions are Django's own."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_PREFIX = "mk_"

# What a key may do (api.md, third wave "Edges"). An admin key (no agents) has all of
# them; an agent-bound key has DEFAULT_PERMISSIONS unless limited; `review` is given
# to an agent-bound key only by name.
PERMISSIONS = ("read", "write", "forget", "review")
DEFAULT_PERMISSIONS = ("read", "write", "forget")


def default_permissions() -> list[str]:
    return list(DEFAULT_PERMISSIONS)


def hash_api_key(raw_key: str) -> str:
    """SHA-256 of the key: keys are 256-bit random tokens, so a fast hash is enough and
    keeps authentication cheap on the hot path."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    """A Bearer key for agents: stored hashed, optionally limited to some agents."""

    name = models.CharField(max_length=100, unique=True)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a key.")
    agent_ids = models.JSONField(default=list, blank=True, help_text="Empty: every agent.")
    permissions = models.JSONField(
        default=default_permissions,
        blank=True,
        help_text="read, write, forget, review; ignored for admin keys (no agents): they have all.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def agent_scope(self) -> frozenset[str] | None:
        """The agents this key may see, or None for all of them."""
        return frozenset(self.agent_ids) if self.agent_ids else None

    @property
    def is_admin(self) -> bool:
        """A key made without agents: it sees every agent and has every permission."""
        return not self.agent_ids

    @property
    def granted(self) -> tuple[str, ...]:
        """The permissions this key has, in PERMISSIONS order."""
        if self.is_admin:
            return PERMISSIONS
        return tuple(p for p in PERMISSIONS if p in set(self.permissions or ()))

    def has_permission(self, permission: str) -> bool:
        return permission in self.granted

    @classmethod
    def generate(
        cls, *, name: str, agent_ids: list[str], permissions: list[str] | None = None
    ) -> tuple[ApiKey, str]:
        """Create a key; the raw key is returned once and never stored. `permissions`
        None: the defaults (an admin key has every permission whatever is stored)."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        granted = DEFAULT_PERMISSIONS if permissions is None else permissions
        key = cls.objects.create(
            name=name,
            key_hash=hash_api_key(raw),
            prefix=raw[:10],
            agent_ids=sorted(set(agent_ids)),
            permissions=[p for p in PERMISSIONS if p in set(granted)],
        )
        return key, raw


class PasswordChangeRequired(models.Model):
    """A person whose password was set by someone else (an admin's one-time password)
    and who must choose their own before using the admin. The row is the flag; it goes
    when they change it (memory_admin.web.middleware.PasswordChangeRequiredMiddleware)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="password_change_required",
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"password change required: {self.user_id}"
