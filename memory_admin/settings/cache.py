"""Django's cache: the local-memory default, or Redis with `MEMORY_CACHE_URL`.

The API's per-key rate limit (`memory_admin.api.ratelimit`) counts in this cache. In
local memory each web process counts for itself, so with N workers a key gets N times
its limit; `MEMORY_CACHE_URL=redis://host:6379/2` points every process (and host) at
one Redis with Django's own `RedisCache`, and the limit holds across all of them.
`MEMORY_CACHE_KEY_PREFIX` (default `memory-admin`) keeps our keys apart when the
Redis is shared.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from memory_admin.settings.env import env_optional, env_str

MEMORY_CACHE_URL = env_optional("MEMORY_CACHE_URL")
if MEMORY_CACHE_URL:
    if not MEMORY_CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(
            "MEMORY_CACHE_URL must be a redis://, rediss:// or unix:// URL of a Redis server"
        )
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": MEMORY_CACHE_URL,
            "KEY_PREFIX": env_str("MEMORY_CACHE_KEY_PREFIX", "memory-admin"),
        }
    }
