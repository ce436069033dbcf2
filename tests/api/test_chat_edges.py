"""The chat proxy at its edges: what an upstream can make it leak, and what a slow one can
take from everyone else (issue 30: F5, F8, F9)."""

from __future__ import annotations

import json
import threading
from typing import Any

import openai
import pytest

from memory_admin.models import ApiKey
from tests.chat_support import AGENT, MEMORY, UPSTREAM_KEY, chat_clients, chat_key, client, upstream
from tests.eventually import eventually
from tests.fakes.openai_server import FakeOpenAI
from tests.http_client import HttpClient

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures, imported for this module

OTHER_AGENT = "agent-other"
QUESTION = [{"role": "user", "content": "what do you remember?"}]


def other_agent_client(live_server: Any, name: str = "other-agent") -> openai.OpenAI:
    key = ApiKey.generate(name=name, agent_ids=[OTHER_AGENT])[1]
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
    from memory_admin.integrations.chat_upstream import upstream_error

    body = {"error": {"message": "m", "type": "sk-Secret-123", "param": None, "code": "sk-Se"}}
    status, error = upstream_error(400, json.dumps(body).encode(), "sk-Secret-123")
    assert status == 400
    assert error["error"]["code"] == "upstream_rejected"
    assert error["error"]["type"] == "upstream_error"
    assert "sk-Se" not in json.dumps(error)
    status, error = upstream_error(502, b"<html>Bad gateway sk-Secret-123</html>", "sk-Secret-123")
    assert status == 502 and "sk-" not in json.dumps(error)


def test_a_slow_upstream_gets_capped_chat_calls_and_context_and_ingest_still_answer(
    client: openai.OpenAI, chat_key: str, upstream: FakeOpenAI, live_server, settings
):
    settings.MEMORY_CHAT_MAX_CONCURRENT = 2
    settings.MEMORY_CHAT_MAX_CONCURRENT_PER_KEY = 1
    upstream.delay(60, then="late answer", times=2)  # reset() below cuts them short
    answers: list[str] = []

    def chat(caller: openai.OpenAI) -> None:
        reply = caller.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
        answers.append(reply.choices[0].message.content or "")

    other = other_agent_client(live_server)
    third = other_agent_client(live_server, name="third-agent")
    waiting = [threading.Thread(target=chat, args=(caller,)) for caller in (client, other)]
    try:
        waiting[0].start()
        eventually(lambda: len(upstream.chat_requests), until=lambda n: n == 1)
        with pytest.raises(openai.RateLimitError) as per_key:
            client.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
        waiting[1].start()
        eventually(lambda: len(upstream.chat_requests), until=lambda n: n == 2)
        with pytest.raises(openai.APIStatusError) as per_process:
            third.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
        # Both chat calls still wait on the upstream; the rest of the API answers.
        api = HttpClient(
            f"{live_server.url}/api/v1/agents/{AGENT}",
            headers={"Authorization": f"Bearer {chat_key}"},
        )
        context = api.post("/context", {"user_id": "u-gene", "message": "hello"})
        assert context.status_code == 200, context.text
        message = {"id": "m1", "role": "user", "content": "I like tea."}
        ingest = api.post("/sessions/s-9/messages", {"user_id": "u-gene", "messages": [message]})
        assert ingest.status_code == 202, ingest.text
        assert len(upstream.chat_requests) == 2  # the refused calls never went upstream
    finally:
        upstream.reset()
        for thread in waiting:
            if thread.ident is not None:
                thread.join(30)
        other.close()
        third.close()
    error: Any = per_key.value
    assert error.status_code == 429 and error.body["code"] == "too_many_concurrent_chats"
    assert error.response.headers["Retry-After"] == "2"
    error = per_process.value
    assert error.status_code == 503 and error.body["code"] == "chat_busy"
    assert error.body["details"] == {"limit": 2, "retry_after_seconds": 2}
    assert error.response.headers["Retry-After"] == "2"
    assert answers == ["late answer", "late answer"]
    # Their slots are free again, a stream's included.
    assert client.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
    with client.chat.completions.create(
        model="m", messages=QUESTION, metadata=MEMORY, stream=True
    ) as stream:
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert client.chat.completions.create(model="m", messages=QUESTION, metadata=MEMORY)
