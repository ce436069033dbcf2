"""The audit log: who changed what and when (admin keys only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from memory_admin.api.auth import needs, visible_agents
from memory_admin.api.v1.schemas import IsoTime, PageQuery, error_responses
from memory_admin.stores import get_store
from streams.core.documents_audit import AuditEntry
from streams.core.pagination import Page
from streams.records.audit import audit_page

router = Router(tags=["audit"])


class AuditQuery(PageQuery):
    actor: str | None = Field(None, min_length=1, max_length=200, description="e.g. `api:ci`")
    object_id: str | None = Field(None, min_length=1, max_length=200)
    action: str | None = Field(None, min_length=1, max_length=100, description="e.g. `user.forget`")
    since: IsoTime | None = Field(None, description="Entries at or after this time.")


class AuditEntryOut(Schema):
    id: str
    at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str | None
    agent_id: str | None
    summary: dict[str, Any]


class AuditPageOut(Schema):
    items: list[AuditEntryOut]
    next_cursor: str | None


@router.get(
    "/audit", auth=needs("read"), response={200: AuditPageOut, **error_responses(401, 403, 422)}
)
def list_audit(request: HttpRequest, filters: Query[AuditQuery]) -> Page[AuditEntry]:
    """The audit log, newest first. A page can come back short with a `next_cursor`: it
    searched a bounded stretch of the log; follow the cursor to go on.

    Keys limited to agents get 403: the log spans every agent and the people who
    operate them.
    """
    if visible_agents(request) is not None:
        raise HttpError(403, "the audit log needs a key that is not limited to agents")
    return audit_page(
        store=get_store(),
        actor=filters.actor,
        object_id=filters.object_id,
        action=filters.action,
        since=filters.since,
        cursor=filters.cursor,
        limit=filters.limit,
    )
