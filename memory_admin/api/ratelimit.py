"""A per-key request limit: MEMORY_API_RATE_LIMIT requests per minute, off when 0.

A fixed one-minute window counted in Django's cache: per process with the default
local-memory cache, shared by every process and host with `MEMORY_CACHE_URL` pointing
at Redis (do that in production, where several web workers serve one key). A cache
that cannot be reached lets the request through (logged): the limiter must not take
the API down with it.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.core.cache import cache

from streams.core.exceptions import MemoryServiceError

logger = logging.getLogger("memory_admin.api")

WINDOW_SECONDS = 60


class RateLimited(MemoryServiceError):
    """429: the key sent more requests this minute than MEMORY_API_RATE_LIMIT allows."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, details={"retry_after_seconds": retry_after})
        self.retry_after = retry_after


def check_rate(key_id: object) -> None:
    """Count one request of this key; RateLimited once the minute's allowance is spent."""
    limit = settings.MEMORY_API_RATE_LIMIT
    if limit <= 0:
        return
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    name = f"memory-api-rate:{key_id}:{window}"
    try:
        count = _count(name)
    except Exception as exc:  # the cache (Redis) is down or unreachable
        logger.warning("rate limit not checked, the cache failed: %s", exc)
        return
    if count > limit:
        retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        raise RateLimited(
            f"this key sent more than {limit} requests this minute; retry in {retry_after} s",
            retry_after=retry_after,
        )


def _count(name: str) -> int:
    """This window's count after one more request (atomic in Redis: SET NX, then INCR)."""
    cache.add(name, 0, timeout=WINDOW_SECONDS * 2)
    try:
        return cache.incr(name)
    except ValueError:  # expired between add and incr: this request opens the window
        cache.set(name, 1, timeout=WINDOW_SECONDS * 2)
        return 1
