"""Bearer API keys, and the one access rule they carry: which agents a key may see.

A key limited to some agents must not learn that another agent's objects
exist, so every "not yours" is answered exactly like "not there" (404).
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from django.db import OperationalError
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from memory_admin.api.ratelimit import check_rate
from memory_admin.models import ApiKey, hash_api_key
from streams.exceptions import NotFound

# `last_used_at` is for operators ("is this key still in use?"), so a minute's
# resolution is plenty and spares a write on every request of the hot path.
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_TOKEN_CHARS = 256


class ApiKeyAuth(HttpBearer):
    """`Authorization: Bearer <key>`; `request.auth` becomes the active `ApiKey`."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        token = token.strip()
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        key = ApiKey.objects.active().filter(key_hash=hash_api_key(token)).first()
        if key is None:
            return None
        check_rate(key.pk)
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
            # SQLite locked by a concurrent request: skip this beat, the next one writes.
            with contextlib.suppress(OperationalError):
                ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        return key


def visible_agents(request: HttpRequest) -> frozenset[str] | None:
    """The agents the caller's key may see, or None for every agent."""
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    return key.agent_scope


def require_agent(request: HttpRequest, agent_id: str) -> None:
    """NotFound unless the caller's key may see `agent_id`."""
    agents = visible_agents(request)
    if agents is not None and agent_id not in agents:
        raise NotFound("agent not found")


def actor_name(request: HttpRequest) -> str:
    """Who a write is recorded as: the caller's API key name."""
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    return key.name
