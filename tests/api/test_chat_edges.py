"""The chat proxy at its edges: what an upstream can make it leak, and what a slow one can
take from everyone else (issue 30: F5, F8, F9)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from memory_admin.models import ApiKey
from tests.chat_support import MEMORY, UPSTREAM_KEY, chat_clients, chat_key, client, upstream
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


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_401_is_a_502_of_ours_that_never_echoes_the_upstream_key(
    client: openai.OpenAI, upstream: FakeOpenAI, store, stream: bool
):
    upstream.fail(401, message="Incorrect API key provided.", echo_headers=True)
    raw = client.chat.completions.with_raw_response
    with pytest.raises(openai.APIStatusError) as caught:
        raw.create(model="m", messages=QUESTION, metadata=MEMORY, stream=stream)
    error: Any = caught.value
    assert upstream.chat_requests[-1].header("Authorization") == f"Bearer {UPSTREAM_KEY}"
    assert error.status_code == 502  # the caller's key is fine: ours was refused
    assert not isinstance(error, openai.AuthenticationError)
    assert error.body["code"] == "upstream_auth_failed"
    assert set(error.body) == {"message", "type", "param", "code"}  # OpenAI's shape
    assert "MEMORY_CHAT_UPSTREAM_API_KEY" in error.body["message"]
    assert UPSTREAM_KEY not in error.response.text
    assert all(UPSTREAM_KEY not in value for value in error.response.headers.values())
    assert "Request headers" not in error.response.text  # none of the upstream's words


@pytest.mark.parametrize(
    ("upstream_status", "status", "code"),
    [
        (400, 400, "upstream_rejected"),
        (404, 404, "unknown_url"),  # the fake says so, like OpenAI
        (429, 429, "rate_limit_exceeded"),  # the upstream's own code: a plain identifier
        (500, 502, "upstream_error"),
        (503, 502, "upstream_error"),
    ],
)
def test_upstream_errors_become_ours_without_the_upstreams_text(
    client: openai.OpenAI, upstream: FakeOpenAI, upstream_status: int, status: int, code: str
):
    upstream.fail(upstream_status, message="upstream words", echo_headers=True)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
    error: Any = caught.value
    assert (error.status_code, error.body["code"]) == (status, code)
    assert UPSTREAM_KEY not in error.response.text
    assert "upstream words" not in error.response.text
    assert error.body["message"].startswith("the chat upstream")


def test_an_upstream_error_code_that_could_carry_a_key_is_not_passed_on():
    from memory_admin.chat_upstream import upstream_error

    body = {"error": {"message": "m", "type": "sk-Secret-123", "param": None, "code": "sk-Se"}}
    status, error = upstream_error(400, json.dumps(body).encode(), "sk-Secret-123")
    assert status == 400
    assert error["error"]["code"] == "upstream_rejected"
    assert error["error"]["type"] == "upstream_error"
    assert "sk-Se" not in json.dumps(error)
    status, error = upstream_error(502, b"<html>Bad gateway sk-Secret-123</html>", "sk-Secret-123")
    assert status == 502 and "sk-" not in json.dumps(error)
