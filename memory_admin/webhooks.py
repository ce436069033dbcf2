"""Webhook delivery's HTTP side: one POST with a timeout, no redirects followed."""

from __future__ import annotations

import httpx2 as httpx
from django.conf import settings

from streams.store import MemoryStore
from streams.webhooks import webhook_deliver_due


def http_post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """The receiver's status; raises when it never answers (refused, reset, timed out)."""
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        return client.post(url, content=body, headers=headers).status_code


def deliver_due(store: MemoryStore) -> dict[str, int]:
    return webhook_deliver_due(
        store=store,
        post=http_post,
        timeout=settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS,
        allow_private=settings.MEMORY_WEBHOOK_ALLOW_PRIVATE,
    )
