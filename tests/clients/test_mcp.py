"""`manage.py mcp` with the SDK's own client: over stdio (spawned) and streamable HTTP (a
loopback port), against the live server; the key's permissions apply to every tool."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from memory_admin_client import MemoryClient

from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.clients import aio
from tests.clients.conftest import AGENT

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"remember", "search_memory", "get_context", "forget_observation"}


def stdio_server(live_server: Any, key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--transport", "stdio"],
        cwd=str(ROOT),
        env={
            "MEMORY_API_URL": live_server.url,
            "MEMORY_API_KEY": key,
            "PYTHONPATH": str(ROOT),
            "MEMORY_TEST_MONGODB_URI": os.environ.get("MEMORY_TEST_MONGODB_URI", ""),
        },
    )


def text_of(result: Any) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "text", None))


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), text_of(result)


def test_stdio_tools_reach_memory_through_the_api(live_server: Any, api_key: str) -> None:
    with MemoryClient(live_server.url, api_key=api_key) as memory:
        memory.create_group_scope(agent_id=AGENT, group_id="g-eden")

    async def scenario() -> dict[str, Any]:
        async with Client(stdio_server(live_server, api_key), read_timeout_seconds=60) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            remembered = await call(
                client,
                "remember",
                agent_id=AGENT,
                group_id="g-eden",
                content="The Eden team deploys on Thursdays",
            )
            found = await call(
                client,
                "search_memory",
                agent_id=AGENT,
                query="deploys thursdays",
                group_id="g-eden",
            )
            context = await call(
                client,
                "get_context",
                agent_id=AGENT,
                user_id="u-gene",
                message="when do we deploy?",
                groups=["g-eden"],
            )
            both = await call(
                client,
                "remember",
                agent_id=AGENT,
                group_id="g-eden",
                user_id="u-gene",
                content="x",
            )
            return {
                "tools": tools,
                "remembered": remembered,
                "found": found,
                "context": context,
                "both": both,
            }

    seen = aio.run(scenario())
    assert seen["tools"] == TOOLS
    assert seen["remembered"][0] is False and "Remembered as observation" in seen["remembered"][1]
    assert seen["found"] == (False, seen["found"][1])
    assert "The Eden team deploys on Thursdays" in seen["found"][1]
    assert seen["context"][0] is False and seen["context"][1].startswith("<MemoryContext")
    assert seen["both"][0] is True and "exactly one" in seen["both"][1]


def test_a_key_without_the_permission_is_refused_with_the_reason(
    live_server: Any, make_key: Callable[..., str]
) -> None:
    writer = make_key()
    with MemoryClient(live_server.url, api_key=writer) as memory:
        scope = memory.create_group_scope(agent_id=AGENT, group_id="g-eden")
        kept = memory.add_observation(scope_id=scope.id, content="Lunch is at noon")
    reader = make_key(permissions=["read"])

    async def scenario() -> tuple[Any, ...]:
        async with Client(stdio_server(live_server, reader), read_timeout_seconds=60) as client:
            forget = await call(client, "forget_observation", observation_id=kept.id)
            remember = await call(
                client, "remember", agent_id=AGENT, scope_id=scope.id, content="Dinner at 8"
            )
            search = await call(
                client, "search_memory", agent_id=AGENT, query="lunch", group_id="g-eden"
            )
            return forget, remember, search

    forget, remember, search = aio.run(scenario())
    for refused in (forget, remember):
        assert refused[0] is True
        assert "permission_denied: this API key lacks the 'write' permission" in refused[1]
    assert search[0] is False and "Lunch is at noon" in search[1]
    with MemoryClient(live_server.url, api_key=writer) as memory:
        assert memory.get_observation(observation_id=kept.id).deleted is False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def mcp_http(live_server: Any, tmp_path: Path) -> Iterator[str]:
    """`manage.py mcp --transport http` on a loopback port; its /mcp URL."""
    port = free_port()
    env = {**os.environ, "MEMORY_API_URL": live_server.url, "PYTHONPATH": str(ROOT)}
    env.pop("MEMORY_API_KEY", None)  # over HTTP each caller brings its own key
    log = tmp_path / "mcp-http.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp", "--transport", "http", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError as error:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(log.read_text()) from error
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_streamable_http_uses_each_callers_key(
    mcp_http: str, live_server: Any, make_key: Callable[..., str], store: MemoryStore
) -> None:
    # A user's own memory begins with their first formed conversation (no API creates
    # it): made here as formation would.
    own, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    writer = make_key()
    with MemoryClient(live_server.url, api_key=writer) as memory:
        scope = memory.create_group_scope(agent_id=AGENT, group_id="g-eden")
        memory.ingest_messages(
            agent_id=AGENT,
            session_id="s-1",
            user_id="u-gene",
            user_name="Gene",
            messages=[{"id": "m-1", "role": "user", "content": "hello"}],
        )
        (own,) = memory.list_scopes(agent_id=AGENT, user_id="u-gene", scope_type="individual").items
        memory.add_observation(scope_id=own.id, content="Gene takes the train to work")
    reader = make_key(permissions=["read"])
    anonymous = httpx2.post(mcp_http, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthorized"

    async def as_key(key: str) -> tuple[Any, ...]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(mcp_http, http_client=http)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            added = await call(
                client, "remember", agent_id=AGENT, scope_id=scope.id, content="Coffee at 10"
            )
            found = await call(
                client, "search_memory", agent_id=AGENT, query="coffee", group_id="g-eden"
            )
            personal = await call(
                client, "remember", agent_id=AGENT, user_id="u-gene", content="Gene likes jazz"
            )
            stranger = await call(
                client, "remember", agent_id=AGENT, user_id="u-new", content="Unknown person"
            )
            templates = (await client.list_resource_templates()).resource_templates
            read = await client.read_resource(f"memory://agents/{AGENT}/users/u-gene")
            seen = [t.uri_template for t in templates]
            return tools, added, found, seen, read, personal, stranger

    tools, added, found, templates, read, personal, stranger = aio.run(as_key(writer))
    assert personal[0] is False and f"in scope {own.id}" in personal[1]
    assert stranger[0] is True and "not_found: user u-new has no memory" in stranger[1]
    assert tools == TOOLS and added[0] is False and "Coffee at 10" in found[1]
    assert templates == ["memory://agents/{agent_id}/users/{user_id}"]
    (page,) = read.contents
    assert page.mime_type == "text/markdown" and "- Gene takes the train to work" in page.text
    assert "- Gene likes jazz" in page.text
    _, refused, readable, *_ = aio.run(as_key(reader))

    async def stranger() -> tuple[tuple[bool, str], str]:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer mem_not_a_key"}, timeout=30)
        async with http, Client(streamable_http_client(mcp_http, http_client=http)) as client:
            searched = await call(client, "search_memory", agent_id=AGENT, query="coffee")
            with pytest.raises(MCPError) as unread:
                await client.read_resource(f"memory://agents/{AGENT}/users/u-gene")
            return searched, str(unread.value)

    searched, unread = aio.run(stranger())
    assert searched[0] is True and "unauthorized:" in searched[1]
    assert "unauthorized:" in unread
    assert refused[0] is True and "permission_denied:" in refused[1]
    assert "Coffee at 10" in readable[1]
