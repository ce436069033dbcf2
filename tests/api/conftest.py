"""API fixtures: keys (all agents, or limited to some), clients that send them, and asserts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from memory_admin.models import ApiKey

API = "/api/v1"


@pytest.fixture
def api_key(db) -> tuple[ApiKey, str]:
    """A key that sees every agent, with its raw value."""
    return ApiKey.generate(name="test-key", agent_ids=[])


@pytest.fixture
def limited_key(db) -> tuple[ApiKey, str]:
    """A key limited to `agent-1`."""
    return ApiKey.generate(name="agent-1-key", agent_ids=["agent-1"])


def bearer_client(raw_key: str, **kwargs: Any) -> Client:
    return Client(headers={"Authorization": f"Bearer {raw_key}"}, **kwargs)


@pytest.fixture
def api(api_key: tuple[ApiKey, str]) -> Client:
    return bearer_client(api_key[1])


@pytest.fixture
def limited_api(limited_key: tuple[ApiKey, str]) -> Client:
    return bearer_client(limited_key[1])


@pytest.fixture
def group_scope_id(api: Client) -> str:
    """A group scope of agent `a1`, made through the API."""
    response = api.post(
        f"{API}/agents/a1/scopes",
        data={"scope_type": "group", "group_id": "g1"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is the one error envelope, with this status and code; its `error`."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = json.loads(response.content)
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]
