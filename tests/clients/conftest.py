"""Fixtures for the Python client and the MCP server: the live test server (a real socket),
keys saved where its threads see them, and transports that drop a connection on purpose."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from memory_admin_client import MemoryClient

from memory_admin.models import ApiKey

AGENT = "agent-client"


@pytest.fixture
def make_key(transactional_db: Any) -> Callable[..., str]:
    """`make_key(permissions=None, agents=[AGENT])`: a raw key the live server accepts."""
    made = iter(range(1000))

    def make(*, permissions: list[str] | None = None, agents: list[str] | None = None) -> str:
        name = f"client-key-{next(made)}"
        return ApiKey.generate(
            name=name, agent_ids=[AGENT] if agents is None else agents, permissions=permissions
        )[1]

    return make


@pytest.fixture
def api_key(make_key: Callable[..., str]) -> str:
    return make_key()


@pytest.fixture
def memory(live_server: Any, api_key: str) -> Iterator[MemoryClient]:
    with MemoryClient(live_server.url, api_key=api_key, timeout=20) as client:
        yield client


def body_of(request: httpx2.Request) -> Any:
    return json.loads(request.content) if request.content else None


class DropAfterSend(httpx2.HTTPTransport):
    """Sends each request for real; the first `drops` POSTs then lose their answer (the
    server did the work, the caller sees a dropped connection)."""

    def __init__(self, *, drops: int) -> None:
        super().__init__()
        self.drops = drops
        self.sent: list[tuple[str, str, Any]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = super().handle_request(request)
        self.sent.append((request.method, request.url.path, body_of(request)))
        if self.drops and request.method == "POST":
            self.drops -= 1
            response.read()
            response.close()
            raise httpx2.RemoteProtocolError("Server disconnected", request=request)
        return response


class AsyncDropAfterSend(httpx2.AsyncHTTPTransport):
    def __init__(self, *, drops: int) -> None:
        super().__init__()
        self.drops = drops
        self.sent: list[tuple[str, str, Any]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        self.sent.append((request.method, request.url.path, body_of(request)))
        if self.drops and request.method == "POST":
            self.drops -= 1
            await response.aread()
            await response.aclose()
            raise httpx2.RemoteProtocolError("Server disconnected", request=request)
        return response
