"""The chat proxy at its edges: what an upstream can make it leak, and what a slow one can
take from everyone else (issue 30: F5, F8, F9)."""

from __future__ import annotations

from typing import Any

import openai

from memory_admin.models import ApiKey
from tests.chat_support import MEMORY, chat_clients, chat_key, client, upstream
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures, imported for this module

OTHER_AGENT = "agent-other"
QUESTION = [{"role": "user", "content": "what do you remember?"}]


def other_agent_client(live_server: Any) -> openai.OpenAI:
    key = ApiKey.generate(name="other-agent", agent_ids=[OTHER_AGENT])[1]
    return openai.OpenAI(
        base_url=f"{live_server.url}/api/v1/agents/{OTHER_AGENT}",
        api_key=key,
        max_retries=0,
        timeout=20,
    )


def test_a_cookie_the_upstream_sets_for_one_agent_never_reaches_another(
    client: openai.OpenAI, upstream: FakeOpenAI, live_server
):
    upstream.reply("Hello A.", headers={"Set-Cookie": "upstream-session=agent-a; Path=/"})
    answer = client.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
    assert answer.choices[0].message.content == "Hello A."
    with other_agent_client(live_server) as other:
        other.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
    first, second = upstream.chat_requests
    assert second.header("Cookie") is None, second.headers
    assert first.header("Cookie") is None
