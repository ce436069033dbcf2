"""A per-key request limit: MEMORY_API_RATE_LIMIT requests per minute, off when 0.

A fixed one-minute window counted in Django's cache: per process with the default
local-memory cache, shared by every process and host with `MEMORY_CACHE_URL` pointing
at Redis (do that in production, where several web workers serve one key).

It fails closed: when the shared cache cannot be reached, the count falls back to this
process's own memory (the same limit, per process: with N workers a key gets at most N
times it, never unlimited), `/api/v1/health` says `rate_limit: per_process_fallback`,
and the shared cache is tried again after `SHARED_RETRY_SECONDS` (so a Redis that is
down does not cost every request a failed connection).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Literal

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache

from streams.core.exceptions import MemoryServiceError

logger = logging.getLogger("memory_admin.api")

WINDOW_SECONDS = 60
SHARED_RETRY_SECONDS = 5.0
Mode = Literal["off", "per_process", "shared", "per_process_fallback"]


class RateLimited(MemoryServiceError):
    """429: the key sent more requests this minute than MEMORY_API_RATE_LIMIT allows."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, details={"retry_after_seconds": retry_after})
        self.retry_after = retry_after


class _Fallback:
    """This process's own counts, used while the shared cache is down."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.shared_down_until = 0.0

    def count(self, name: str, window: int) -> int:
        with self.lock:
            stale = [k for k in self.counts if not k.endswith(f":{window}")]
            for key in stale:
                del self.counts[key]
            self.counts[name] = self.counts.get(name, 0) + 1
            return self.counts[name]

    def shared_down(self, now: float) -> bool:
        return now < self.shared_down_until

    def mark_down(self, now: float) -> None:
        self.shared_down_until = now + SHARED_RETRY_SECONDS

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.shared_down_until = 0.0


FALLBACK = _Fallback()


def reset_for_tests() -> None:
    FALLBACK.reset()


def check_rate(key_id: object) -> None:
    """Count one request of this key; RateLimited once the minute's allowance is spent."""
    limit = settings.MEMORY_API_RATE_LIMIT
    if limit <= 0:
        return
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    name = f"memory-api-rate:{key_id}:{window}"
    count = None
    if not FALLBACK.shared_down(now):
        try:
            count = _count(name)
        except Exception as exc:  # the cache (Redis) is down or unreachable
            logger.warning("rate limit counted per process, the shared cache failed: %s", exc)
            FALLBACK.mark_down(now)
    if count is None:
        count = FALLBACK.count(name, window)
    if count > limit:
        retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        raise RateLimited(
            f"this key sent more than {limit} requests this minute; retry in {retry_after} s",
            retry_after=retry_after,
        )


def rate_limit_mode() -> Mode:
    """How the limit is counted now, for `/api/v1/health`: a shared cache is probed
    (at most once per `SHARED_RETRY_SECONDS` while it is down)."""
    if settings.MEMORY_API_RATE_LIMIT <= 0:
        return "off"
    if isinstance(caches["default"], LocMemCache):
        return "per_process"
    now = time.time()
    if not FALLBACK.shared_down(now):
        try:
            cache.get("memory-api-rate:probe")
        except Exception as exc:
            logger.warning("rate limit counted per process, the shared cache failed: %s", exc)
            FALLBACK.mark_down(now)
    return "per_process_fallback" if FALLBACK.shared_down(now) else "shared"


def _count(name: str) -> int:
    """This window's count after one more request (atomic in Redis: SET NX, then INCR)."""
    cache.add(name, 0, timeout=WINDOW_SECONDS * 2)
    try:
        return cache.incr(name)
    except ValueError:  # expired between add and incr: this request opens the window
        cache.set(name, 1, timeout=WINDOW_SECONDS * 2)
        return 1
