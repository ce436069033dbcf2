"""The Django-side tables: API keys (hashed). People, roles and sessions are Django's own."""

from __future__ import annotations

import hashlib
import secrets

from django.db import models
from django.utils import timezone

KEY_PREFIX = "mk_"


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

    @classmethod
    def generate(cls, *, name: str, agent_ids: list[str]) -> tuple[ApiKey, str]:
        """Create a key; the raw key is returned once and never stored."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        key = cls.objects.create(
            name=name, key_hash=hash_api_key(raw), prefix=raw[:10], agent_ids=sorted(set(agent_ids))
        )
        return key, raw
