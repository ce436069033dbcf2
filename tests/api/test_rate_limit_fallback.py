"""The rate limit fails closed (issue 44): with the shared counter (Redis) down, a key is
held to a per-process count of the same limit, never let through unlimited, and
`/api/v1/health` says the limit is counted per process for now."""

from __future__ import annotations

import pytest
from django.test import Client

from memory_admin.api import ratelimit
from memory_admin.runtime.embedded_store import _free_port
from tests.api.conftest import API

LIMIT = 60


@pytest.fixture
def redis_down(settings):
    """Django's cache pointed at a Redis that is not there (a closed loopback port)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{_free_port()}/0",
        }
    }
    settings.MEMORY_API_RATE_LIMIT = LIMIT
    ratelimit.reset_for_tests()
    yield
    ratelimit.reset_for_tests()


def test_with_redis_down_100_requests_meet_a_limit_of_60(api, redis_down):
    statuses = [api.get(f"{API}/jobs").status_code for _ in range(100)]
    assert statuses.count(200) <= LIMIT, statuses
    assert statuses.count(429) >= 100 - LIMIT, statuses
    assert set(statuses) == {200, 429}


def test_health_says_the_limit_is_counted_per_process_while_redis_is_down(db, api, redis_down):
    api.get(f"{API}/jobs")
    body = Client().get(f"{API}/health").json()
    assert body["rate_limit"] == "per_process_fallback", body


def test_health_names_the_limit_mode_in_every_state(db, settings):
    settings.MEMORY_API_RATE_LIMIT = 0
    assert Client().get(f"{API}/health").json()["rate_limit"] == "off"
    settings.MEMORY_API_RATE_LIMIT = 5
    assert Client().get(f"{API}/health").json()["rate_limit"] == "per_process"
