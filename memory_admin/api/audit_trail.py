"""Who an API caller is, for the domain's actions (which record the audit entry)."""

from __future__ import annotations

from django.http import HttpRequest

from memory_admin.api.auth import actor_name
from streams.actions import Actor


def api_actor(request: HttpRequest) -> Actor:
    """How the log names an API caller: `api:<key name>`."""
    return Actor.api(actor_name(request))
