"""Webhook delivery's HTTP side: one POST with a timeout, no redirects followed."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx2 as httpx
from django.conf import settings

from streams.records.webhooks import webhook_deliver_due
from streams.store import MemoryStore


def http_post(
    url: str, body: bytes, headers: dict[str, str], timeout: float, address: str | None = None
) -> int:
    """The receiver's status; raises when it never answers (refused, reset, timed out).

    With `address` (checked public by `webhook_url_check`), the connection goes to that
    address, with the URL's host in `Host` and in TLS (SNI and the certificate's name),
    so the name is not resolved a second time (DNS rebinding)."""
    extensions: dict[str, str] = {}
    if address is not None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        literal = f"[{address}]" if ":" in address else address
        netloc = f"{literal}:{parts.port}" if parts.port else literal
        headers = {**headers, "Host": parts.netloc.rsplit("@", 1)[-1]}
        url = urlunsplit(parts._replace(netloc=netloc))
        if parts.scheme == "https":
            extensions["sni_hostname"] = host
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        return client.post(url, content=body, headers=headers, extensions=extensions).status_code


def deliver_due(store: MemoryStore) -> dict[str, int]:
    return webhook_deliver_due(
        store=store,
        post=http_post,
        timeout=settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS,
        allow_private=settings.MEMORY_WEBHOOK_ALLOW_PRIVATE,
    )
