"""Webhook delivery's HTTP side and its runner.

The periodic task (`deliver_webhooks`, every 5 s) only claims the entries whose turn
has come (`webhook_claim_due`, quick store work) and hands each to a pool of delivery
threads of its own (`MEMORY_WEBHOOK_THREADS`, default 8), then returns: the sweeps that
share its thread (job recovery, cold sessions) never wait on a receiver. Each agent has
at most `MEMORY_WEBHOOK_AGENT_CONCURRENCY` deliveries in flight (default 2), so one
agent's slow or dead receivers hold that share of the pool and no more; another agent's
deliveries go out on the rest. A POST connects within `MEMORY_WEBHOOK_CONNECT_TIMEOUT_SECONDS`
(default 2) and waits for its answer `MEMORY_WEBHOOK_TIMEOUT_SECONDS` (default 5), no
redirects followed; a failure is retried with backoff (`streams.records.webhook_delivery`).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import httpx2 as httpx
from django.conf import settings

from streams.records.webhook_delivery import (
    Claimed,
    webhook_claim_due,
    webhook_deliver_due,
    webhook_deliver_one,
)
from streams.store import MemoryStore

logger = logging.getLogger("memory_admin.integrations.webhooks")


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
    connect = min(timeout, settings.MEMORY_WEBHOOK_CONNECT_TIMEOUT_SECONDS)
    limits = httpx.Timeout(timeout, connect=connect)
    with httpx.Client(timeout=limits, follow_redirects=False) as client:
        return client.post(url, content=body, headers=headers, extensions=extensions).status_code


def deliver_due(store: MemoryStore) -> dict[str, int]:
    """One pass in the caller's thread (tests, a one-off pass): every attempt waited for."""
    return webhook_deliver_due(
        store=store,
        post=http_post,
        timeout=settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS,
        allow_private=settings.MEMORY_WEBHOOK_ALLOW_PRIVATE,
    )


class DeliveryPool:
    """Delivery threads of their own, with a cap on each agent's deliveries in flight."""

    def __init__(self, *, threads: int, per_agent: int) -> None:
        self.per_agent = per_agent
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="webhook")
        self.lock = threading.Lock()
        self.in_flight: dict[str, int] = {}

    def room(self, agent_id: str) -> int:
        with self.lock:
            return max(0, self.per_agent - self.in_flight.get(agent_id, 0))

    def dispatch(self, store: MemoryStore) -> dict[str, int]:
        """Claim what is due (within each agent's room) and hand it to the threads."""
        timeout = settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS
        claimed, counts = webhook_claim_due(store=store, timeout=timeout, room=self.room)
        for item in claimed:
            with self.lock:
                self.in_flight[item.agent_id] = self.in_flight.get(item.agent_id, 0) + 1
            self.executor.submit(self._deliver, store, item, timeout)
        return {**counts, "dispatched": len(claimed)}

    def _deliver(self, store: MemoryStore, item: Claimed, timeout: float) -> None:
        try:
            webhook_deliver_one(
                store=store,
                claimed=item,
                post=http_post,
                timeout=timeout,
                allow_private=settings.MEMORY_WEBHOOK_ALLOW_PRIVATE,
            )
        except Exception:  # the store failed: the lease lapses and a later pass retries
            logger.exception("webhook delivery %s failed to record", item.entry["_id"])
        finally:
            with self.lock:
                self.in_flight[item.agent_id] -= 1

    def idle(self) -> bool:
        with self.lock:
            return not any(self.in_flight.values())


_pool: DeliveryPool | None = None
_pool_lock = threading.Lock()


def delivery_pool() -> DeliveryPool:
    """This process's pool (made at first use, with the settings of that moment)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = DeliveryPool(
                threads=settings.MEMORY_WEBHOOK_THREADS,
                per_agent=settings.MEMORY_WEBHOOK_AGENT_CONCURRENCY,
            )
        return _pool


def dispatch_due(store: MemoryStore) -> dict[str, int]:
    """The periodic pass: claims handed to the delivery pool; returns at once."""
    return delivery_pool().dispatch(store)
