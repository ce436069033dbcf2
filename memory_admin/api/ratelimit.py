"""A per-key request limit: MEMORY_API_RATE_LIMIT requests per minute, off when 0.

A fixed one-minute window counted in Django's cache: per process with the default
local-memory cache, shared by every process when `CACHES` points at Redis or
memcached (do that in production, where several web workers serve one key).
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache

from streams.exceptions import MemoryServiceError

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
    cache.add(name, 0, timeout=WINDOW_SECONDS * 2)
    try:
        count = cache.incr(name)
    except ValueError:  # expired between add and incr: this request opens the window
        cache.set(name, 1, timeout=WINDOW_SECONDS * 2)
        count = 1
    if count > limit:
        retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        raise RateLimited(
            f"this key sent more than {limit} requests this minute; retry in {retry_after} s",
            retry_after=retry_after,
        )
