"""Webhooks: per agent, a URL and the events it wants; deliveries signed and retried.

`POST|GET /agents/{agent_id}/webhooks`, `PATCH|DELETE /webhooks/{id}`,
`GET /webhooks/{id}/deliveries` (each delivery with its attempts). The secret is in the
create answer only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Path, Query, Router, Schema, Status
from pydantic import Field, StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import ExternalId, InSchema, PageQuery, error_responses
from memory_admin.stores import get_store
from streams.actions.webhooks import do_webhook_create, do_webhook_delete, do_webhook_update
from streams.core.pagination import Page
from streams.core.webhook_events import EVENTS, WebhookEvent, webhook_events_described
from streams.records.webhooks import (
    MAX_URL_CHARS,
    webhook_deliveries_page,
    webhook_get,
    webhooks_page,
)

EVENTS_DESCRIPTION = "The events to deliver: " + webhook_events_described() + "."
Url = Annotated[str, StringConstraints(min_length=8, max_length=MAX_URL_CHARS)]


class WebhookIn(InSchema):
    url: Url = Field(..., description="http(s); private and loopback addresses are refused.")
    events: list[WebhookEvent] = Field(
        ..., min_length=1, max_length=len(EVENTS), description=EVENTS_DESCRIPTION
    )


class WebhookPatchIn(InSchema):
    active: bool | None = Field(None, description="false stops deliveries.")
    url: Url | None = None
    events: list[WebhookEvent] | None = Field(
        None, min_length=1, max_length=len(EVENTS), description=EVENTS_DESCRIPTION
    )


class WebhookOut(Schema):
    id: str
    agent_id: str
    url: str
    events: list[str]
    active: bool
    created_at: datetime


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(..., description="Shown once: the HMAC-SHA256 key of the signatures.")


class WebhookPageOut(Schema):
    items: list[WebhookOut]
    next_cursor: str | None


class AttemptOut(Schema):
    at: datetime
    status_code: int | None
    error: str | None
    ms: float


class DeliveryOut(Schema):
    id: str
    webhook_id: str
    event: str
    object_key: str
    status: str = Field(..., description="`pending`, `delivered`, `failed` or `stopped`.")
    created_at: datetime
    next_attempt_at: datetime | None
    attempts: list[AttemptOut]


class DeliveryPageOut(Schema):
    items: list[DeliveryOut]
    next_cursor: str | None


router = Router(tags=["webhooks"])


@router.post(
    "/agents/{agent_id}/webhooks",
    auth=needs("write"),
    response={201: WebhookCreatedOut, **error_responses(400, 401, 404, 409, 422)},
)
def create_webhook(
    request: HttpRequest, agent_id: Path[ExternalId], payload: WebhookIn
) -> Status[dict[str, Any]]:
    """A hook for the agent's changes; the answer holds its `secret`, shown this once."""
    require_agent(request, agent_id)
    hook = do_webhook_create(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        url=payload.url,
        events=list(payload.events),
        allow_private=settings.MEMORY_WEBHOOK_ALLOW_PRIVATE,
    )
    return Status(201, hook)


@router.get(
    "/agents/{agent_id}/webhooks",
    auth=needs("write"),
    response={200: WebhookPageOut, **error_responses(401, 404, 422)},
)
def list_webhooks(
    request: HttpRequest, agent_id: Path[ExternalId], page: Query[PageQuery]
) -> Page[dict[str, Any]]:
    require_agent(request, agent_id)
    return webhooks_page(store=get_store(), agent_id=agent_id, cursor=page.cursor, limit=page.limit)


@router.patch(
    "/webhooks/{webhook_id}",
    auth=needs("write"),
    response={200: WebhookOut, **error_responses(400, 401, 404, 422)},
)
def patch_webhook(request: HttpRequest, webhook_id: str, payload: WebhookPatchIn) -> dict[str, Any]:
    """`{"active": false}` stops deliveries (waiting ones are marked `stopped`)."""
    store = get_store()
    hook = webhook_get(store=store, webhook_id=webhook_id, agent_ids=visible_agents(request))
    return do_webhook_update(
        store=store,
        actor=api_actor(request),
        hook=hook,
        active=payload.active,
        url=payload.url,
        events=list(payload.events) if payload.events is not None else None,
        allow_private=settings.MEMORY_WEBHOOK_ALLOW_PRIVATE,
    )


@router.delete(
    "/webhooks/{webhook_id}", auth=needs("write"), response={204: None, **error_responses(401, 404)}
)
def delete_webhook(request: HttpRequest, webhook_id: str) -> Status[None]:
    store = get_store()
    hook = webhook_get(store=store, webhook_id=webhook_id, agent_ids=visible_agents(request))
    do_webhook_delete(store=store, actor=api_actor(request), hook=hook)
    return Status(204, None)


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    auth=needs("write"),
    response={200: DeliveryPageOut, **error_responses(401, 404, 422)},
)
def list_deliveries(
    request: HttpRequest, webhook_id: str, page: Query[PageQuery]
) -> Page[dict[str, Any]]:
    """The delivery log, newest first: each event with every attempt (time, status, error)."""
    store = get_store()
    hook = webhook_get(store=store, webhook_id=webhook_id, agent_ids=visible_agents(request))
    return webhook_deliveries_page(store=store, hook=hook, cursor=page.cursor, limit=page.limit)
