"""A store that cannot be reached: 503 with the envelope and Retry-After, within about 1 s."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from memory_admin.runtime.embedded_store import _free_port
from tests.api.conftest import API, assert_error


@pytest.fixture
def dead_store(settings) -> None:
    """The store's URI points at a loopback port nothing listens on."""
    settings.MONGODB_URI = f"mongodb://127.0.0.1:{_free_port()}/?directConnection=true"


def timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/agents/a1/scopes", None),
        (
            "post",
            "/agents/a1/sessions/s1/messages",
            {"user_id": "u1", "messages": [{"id": "m1", "role": "user", "content": "Hi"}]},
        ),
        ("get", "/scopes/65e1a0000000000000000a01", None),
        ("get", "/audit", None),
    ],
)
def test_api_calls_answer_503_with_retry_after(api, dead_store, method, path, body):
    kwargs = {"content_type": "application/json", "data": body} if body is not None else {}
    response, elapsed = timed(lambda: getattr(api, method)(API + path, **kwargs))
    assert_error(response, 503, "unavailable")
    assert response["Retry-After"] == "2"
    assert elapsed < 2.5, elapsed  # a short server selection timeout, not pymongo's 30 s


def test_health_says_unavailable_with_retry_after(dead_store):
    response, elapsed = timed(lambda: Client().get(API + "/health"))
    error = assert_error(response, 503, "unavailable")
    assert error["details"]["store"] == "unavailable"
    assert response["Retry-After"] == "2" and elapsed < 2.5


def test_a_ui_page_shows_a_clear_503_page(client, django_user_model, dead_store):
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-123456789")
    client.force_login(user)
    response, elapsed = timed(lambda: client.get("/scopes/"))
    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"] == "2" and elapsed < 2.5
    assert b"The memory store is unavailable" in response.content
