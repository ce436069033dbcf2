"""The API's side of the audit log: every write handler records exactly one entry."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from memory_admin.api.auth import actor_name
from streams.audit import audit_record
from streams.store import MemoryStore


def api_actor(request: HttpRequest) -> str:
    """How the log names an API caller: `api:<key name>`."""
    return f"api:{actor_name(request)}"


def api_audit(
    request: HttpRequest,
    *,
    store: MemoryStore,
    action: str,
    object_type: str,
    object_id: str | None,
    agent_id: str | None = None,
    summary: dict[str, Any] | None = None,
) -> None:
    audit_record(
        store=store,
        actor=api_actor(request),
        action=action,
        object_type=object_type,
        object_id=object_id,
        agent_id=agent_id,
        summary=summary,
    )
