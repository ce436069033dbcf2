"""Fixtures for the chat proxy: the fake OpenAI server as its upstream, and the real `openai`
client as the caller, talking to the live test server over a real socket.

Import the fixtures into a test module (`from tests.chat_support import ...`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from memory_admin.models import ApiKey
from tests.fakes.openai_server import FakeOpenAI

AGENT = "agent-chat"
UPSTREAM_KEY = "upstream-secret"
MEMORY = {"user_id": "u-gene", "user_name": "Gene", "session_id": "s-1"}


@pytest.fixture
def upstream(fake_openai_server: FakeOpenAI, settings: Any) -> Iterator[FakeOpenAI]:
    """The fake server, reset, configured as the chat upstream (the LLM stays offline)."""
    fake_openai_server.reset()
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = fake_openai_server.base_url
    settings.MEMORY_CHAT_UPSTREAM_API_KEY = UPSTREAM_KEY
    settings.MEMORY_CHAT_MODEL_MAP = "memory-gpt=fake-upstream-model"
    settings.MEMORY_CHAT_UPSTREAM_TIMEOUT_SECONDS = 15
    yield fake_openai_server
    fake_openai_server.reset()


@pytest.fixture
def chat_key(transactional_db: Any) -> str:
    """A raw API key for AGENT, saved where the live server's threads can see it."""
    return ApiKey.generate(name="chat-agent", agent_ids=[AGENT])[1]


def chat_client(live_server: Any, key: str, **kwargs: Any) -> openai.OpenAI:
    """The `openai` package pointed at the endpoint: only the base URL and key change."""
    return openai.OpenAI(
        base_url=f"{live_server.url}/api/v1/agents/{AGENT}",
        api_key=key,
        max_retries=0,
        timeout=20,
        **kwargs,
    )


@pytest.fixture
def chat_clients(live_server: Any, chat_key: str) -> Iterator[Callable[..., openai.OpenAI]]:
    """`chat_clients(**options)`: clients closed after the test, so no keep-alive connection
    outlives it (the live server's thread for it would close the test's database later)."""
    made: list[openai.OpenAI] = []

    def make(key: str | None = None, **options: Any) -> openai.OpenAI:
        made.append(chat_client(live_server, key or chat_key, **options))
        return made[-1]

    yield make
    for client in made:
        client.close()


@pytest.fixture
def client(chat_clients: Callable[..., openai.OpenAI], upstream: FakeOpenAI) -> openai.OpenAI:
    return chat_clients()
