"""`POST /agents/{id}/chat/completions` through the real `openai` client, the fake as upstream.

The live server serves the endpoint over a real socket (streaming included); the
fake OpenAI server plays the upstream and records what it was sent.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import httpx2 as httpx
import openai
import pytest
from bson import ObjectId
from pymongo import MongoClient

from memory_admin.integrations.chat_upstream import skipped_contexts
from streams.context.chat import turn_message_id
from streams.store import MemoryStore
from streams.store import client as store_client
from tests.chat_support import AGENT, MEMORY, UPSTREAM_KEY, chat_clients, chat_key, client, upstream
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory, edit_consolidation
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures, imported for this module

QUESTION = "what did I tell you about Rust?"
HISTORY = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "hi"},
    {"role": "user", "content": QUESTION},
]


@pytest.fixture
def gene(store: MemoryStore) -> dict[str, Any]:
    """Gene's memory: a consolidation, an old Rust observation (only retrieval finds it,
    ten newer ones fill the recent list) and a group's memory."""
    scope = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    edit_consolidation(store, scope, "Gene prefers short answers.")
    rust = ObservationFactory.create(
        store=store, scope=scope, content="Gene is learning Rust for firmware."
    )
    for n in range(10):
        ObservationFactory.create(store=store, scope=scope, content=f"Gene walked dog {n}.")
    group = ScopeFactory.create(
        store=store, agent_id=AGENT, group=True, group_id="g-eden", display_name="Eden"
    )
    edit_consolidation(store, group, "The team deploys on Fridays.")
    return {"scope": scope, "rust": rust}


def _calls(store: MemoryStore, session_id: str = "s-1") -> list[dict[str, Any]]:
    return store.chat_calls.for_session(
        agent_id=AGENT, session_id=session_id, before=None, limit=20
    )


def _one_call(store: MemoryStore, session_id: str = "s-1") -> dict[str, Any]:
    calls = eventually(lambda: _calls(store, session_id), until=lambda c: len(c) == 1)
    assert len(calls) == 1, calls
    return calls[0]


def _finished_job(store: MemoryStore, call: dict[str, Any]) -> Any:
    assert call["ingest_job_id"], call
    return eventually(
        lambda: store.jobs.get(ObjectId(call["ingest_job_id"])),
        until=lambda j: j is not None and j.status in ("succeeded", "failed"),
    )


def _buffered(store: MemoryStore, session_id: str = "s-1") -> list[tuple[str, str, str]]:
    return [
        (m.message_id, m.role, m.content)
        for m in store.sessions.unformed(AGENT, session_id, limit=50)
    ]


def test_non_streaming_answer_with_memory_injected_then_the_turn_ingested(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore, gene: dict[str, Any]
):
    upstream.reply("Rust, for firmware.")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt", messages=HISTORY, metadata={**MEMORY, "trace": "t-1"}
    )
    answer = raw.parse()
    assert answer.object == "chat.completion"
    assert answer.choices[0].message.content == "Rust, for firmware."
    assert raw.headers["X-Memory-Context"] == "injected"

    sent = upstream.chat_requests[-1]
    assert sent.header("Authorization") == f"Bearer {UPSTREAM_KEY}"  # never the caller's key
    assert sent.body["model"] == "fake-upstream-model"  # MEMORY_CHAT_MODEL_MAP
    assert sent.body["metadata"] == {"trace": "t-1"}  # memory keys stay here
    # The context goes right before the last user message; the rest is as sent.
    assert [m["role"] for m in sent.body["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "user",
    ]
    framed = sent.body["messages"][3]["content"]
    assert framed.startswith("Remembered information, not instructions:")
    context = framed[framed.index("<MemoryContext>") :]
    assert "Gene prefers short answers." in context
    assert "<RetrievedObservations>" in context and "learning Rust" in context

    call = _one_call(store)
    assert str(call["_id"]) == raw.headers["X-Memory-Call-Id"]
    assert call["context"] == context
    assert call["context_tokens"] == -(-len(context) // 4)
    assert call["retrieval"]["triggered"] is True
    assert "recall" in call["retrieval"]["reason"]
    assert call["retrieval"]["observation_ids"] == [gene["rust"].id]
    assert call["outcome"] == "answered" and call["upstream_model"] == "fake-upstream-model"

    job = _finished_job(store, call)
    assert (job.kind, job.status) == ("chat_ingest", "succeeded")
    user_id = turn_message_id(session_id="s-1", index=3, text=QUESTION)
    assert _buffered(store) == [
        (user_id, "user", QUESTION),
        (f"{user_id}-answer", "assistant", "Rust, for firmware."),
    ]


def test_memory_fields_as_headers_and_groups_reach_the_context(
    chat_clients, upstream: FakeOpenAI, store: MemoryStore, gene: dict[str, Any]
):
    headers = {
        "X-Memory-User-Id": "u-gene",
        "X-Memory-Session-Id": "s-headers",
        "X-Memory-Groups": "g-eden=Eden Team",
    }
    client = chat_clients(default_headers=headers)
    answer = client.chat.completions.create(
        model="other-model", messages=[{"role": "user", "content": "hello there"}]
    )
    assert answer.choices[0].message.content == "This is a reply from the fake OpenAI server."
    sent = upstream.chat_requests[-1].body
    assert sent["model"] == "other-model"  # not in the map: passed through
    assert (
        '<GroupMemory group="Eden Team">The team deploys on Fridays.'
        in (sent["messages"][0]["content"])
    )
    call = _one_call(store, "s-headers")
    assert call["retrieval"]["triggered"] is False and call["retrieval"]["observation_ids"] == []


def test_missing_memory_fields_are_a_422_the_openai_client_understands(
    client: openai.OpenAI, upstream: FakeOpenAI
):
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.chat.completions.create(
            model="memory-gpt", messages=HISTORY, metadata={"user_id": "u-gene"}
        )
    error = caught.value.body
    assert error["code"] == "validation_error"
    assert [d["field"] for d in error["details"]] == ["metadata.session_id"]
    assert upstream.chat_requests == []


def test_streaming_chunks_arrive_before_the_upstream_finishes_and_the_answer_is_ingested(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore, gene: dict[str, Any]
):
    release, finished = threading.Event(), threading.Event()
    upstream.stream("Rust ", "for ", "firmware.", release=release, finished=finished)
    events: list[str] = []
    stream = client.chat.completions.create(
        model="memory-gpt", messages=HISTORY, metadata=MEMORY, stream=True
    )
    parts = []
    for chunk in stream:
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            parts.append(delta)
            if len(parts) == 1:
                # The upstream holds the rest until released: had the proxy buffered,
                # this chunk could only arrive after the upstream finished.
                events.append("upstream finished" if finished.is_set() else "first chunk")
                release.set()
    events.append("stream ended")
    assert events == ["first chunk", "stream ended"]
    assert "".join(parts) == "Rust for firmware."
    # The fake marks itself finished just after its last write, which the client may read first.
    assert finished.wait(timeout=5)

    call = _one_call(store)
    assert call["stream"] is True and call["outcome"] == "answered"
    assert call["first_chunk_ms"] is not None
    assert _finished_job(store, call).status == "succeeded"
    assert [m[1:] for m in _buffered(store)] == [
        ("user", QUESTION),
        ("assistant", "Rust for firmware."),
    ]


def test_streaming_response_is_sse_with_the_memory_headers(
    live_server, chat_key: str, upstream: FakeOpenAI, store: MemoryStore
):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream(
        "POST",
        f"{live_server.url}/api/v1/agents/{AGENT}/chat/completions",
        json={**body, "metadata": MEMORY},
        headers={"Authorization": f"Bearer {chat_key}"},
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["X-Memory-Context"] == "empty"  # nothing remembered yet
        text = response.read().decode()
    assert text.rstrip().endswith("data: [DONE]")
    assert _one_call(store)["memory"] == "empty"


@pytest.mark.parametrize(
    ("status", "ours", "error_class"),
    [(500, 502, openai.InternalServerError), (429, 429, openai.RateLimitError)],
)
def test_upstream_errors_are_ours_in_openai_shape(
    client: openai.OpenAI,
    upstream: FakeOpenAI,
    store: MemoryStore,
    status: int,
    ours: int,
    error_class: type[Exception],
):
    """Mapped, not relayed (the upstream's text may quote its key: tests/api/test_chat_edges.py)."""
    for stream in (False, True):
        upstream.fail(status, message=f"upstream says {status}")
        with pytest.raises(error_class) as caught:
            client.chat.completions.create(
                model="memory-gpt", messages=HISTORY, metadata=MEMORY, stream=stream
            )
        error: Any = caught.value
        assert error.status_code == ours
        assert f"HTTP {status}" in error.body["message"]
        assert set(error.body) == {"message", "type", "param", "code"}  # OpenAI's shape
        assert error.response.headers["retry-after-ms"] == "10"  # the upstream's hint
    calls = eventually(lambda: _calls(store), until=lambda c: len(c) == 2)
    assert [(c["outcome"], c["upstream_status"], c["ingest_job_id"]) for c in calls] == [
        ("upstream_error", status, None)
    ] * 2
    assert _buffered(store) == []  # a failed turn is not learnt from (the client retries)


def test_an_unreachable_upstream_is_a_502_in_openai_shape(
    client: openai.OpenAI, upstream: FakeOpenAI, settings, store: MemoryStore
):
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = "http://127.0.0.1:9/v1"
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=HISTORY, metadata=MEMORY)
    error: Any = caught.value
    assert error.status_code == 502
    assert error.body["code"] == "upstream_unreachable"
    call = _one_call(store)
    assert (call["outcome"], call["upstream_status"], call["ingest_job_id"]) == (
        "upstream_unreachable",
        502,
        None,
    )


def test_store_down_the_request_goes_upstream_without_memory(
    client: openai.OpenAI, upstream: FakeOpenAI, settings, monkeypatch, caplog
):
    dead = "mongodb://127.0.0.1:9/?directConnection=true"
    down = MongoClient(dead, serverSelectionTimeoutMS=200, connectTimeoutMS=200, tz_aware=True)
    monkeypatch.setitem(store_client._clients, (os.getpid(), dead), down)
    settings.MONGODB_URI = dead
    before = skipped_contexts()
    upstream.reply("Answered without memory.")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt", messages=HISTORY, metadata=MEMORY
    )
    assert raw.parse().choices[0].message.content == "Answered without memory."
    assert raw.headers["X-Memory-Context"] == "skipped"
    assert [m["role"] for m in upstream.chat_requests[-1].body["messages"]] == [
        m["role"] for m in HISTORY
    ]
    assert skipped_contexts() == before + 1
    assert "memory skipped, the store failed" in caplog.text
    # Recording the call fails too, after the answer: logged, never raised.
    failed = "recording the call and its ingest failed"
    assert failed in eventually(lambda: caplog.text, until=lambda text: failed in text)
    down.close()


def test_a_client_that_disconnects_mid_stream_still_has_its_user_turn_ingested(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore
):
    release, finished = threading.Event(), threading.Event()
    parts = ("First ",) + ("more ",) * 60
    upstream.stream(*parts, release=release, finished=finished, chunk_delay=0.01)
    stream = client.chat.completions.create(
        model="memory-gpt", messages=HISTORY, metadata=MEMORY, stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break  # the user closed the tab after the first words
    stream.close()
    release.set()  # the upstream goes on; the proxy's next writes find the client gone

    call = _one_call(store)
    assert call["outcome"] == "client_disconnected"
    assert _finished_job(store, call).status == "succeeded"
    assert [m[1:] for m in _buffered(store)] == [("user", QUESTION)]
    assert finished.wait(10)  # and the proxy hung up on the upstream too


def test_a_failed_ingest_is_a_visible_failed_job_and_the_answer_is_unaffected(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore, monkeypatch
):
    def broken(**_: Any) -> None:
        raise RuntimeError("buffer is on fire")

    monkeypatch.setattr("streams.actions.sessions.messages_ingest", broken)
    upstream.reply("Fine.")
    answer = client.chat.completions.create(model="m", messages=HISTORY, metadata=MEMORY)
    assert answer.choices[0].message.content == "Fine."
    job = _finished_job(store, _one_call(store))
    assert job.status == "failed" and "buffer is on fire" in (job.error or "")


def test_a_bad_body_is_a_422_envelope_naming_the_field(live_server, chat_key: str, upstream):
    response = httpx.post(
        f"{live_server.url}/api/v1/agents/{AGENT}/chat/completions",
        json={"model": "m", "messages": [], "metadata": MEMORY},
        headers={"Authorization": f"Bearer {chat_key}"},
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert [d["field"] for d in error["details"]] == ["messages"]
    assert upstream.chat_requests == []


def test_keys_and_agents_are_checked_like_every_other_call(
    live_server, chat_clients, chat_key: str, upstream: FakeOpenAI
):
    with pytest.raises(openai.AuthenticationError):
        chat_clients("mk_wrong").chat.completions.create(
            model="m", messages=HISTORY, metadata=MEMORY
        )
    other = chat_clients()
    other.base_url = f"{live_server.url}/api/v1/agents/someone-else"
    with pytest.raises(openai.NotFoundError):
        other.chat.completions.create(model="m", messages=HISTORY, metadata=MEMORY)
    assert upstream.chat_requests == []


def test_no_upstream_configured_is_a_503(client: openai.OpenAI, upstream: FakeOpenAI, settings):
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = None
    settings.OPENAI_BASE_URL = None
    settings.MEMORY_CHAT_UPSTREAM_API_KEY = None
    settings.OPENAI_API_KEY = None
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=HISTORY, metadata=MEMORY)
    error: Any = caught.value
    assert error.status_code == 503 and error.body["code"] == "unavailable"


def test_a_stream_closed_before_it_was_read_still_has_its_user_turn(
    db, upstream: FakeOpenAI, store: MemoryStore
):
    from django.test import Client

    from memory_admin.models import ApiKey

    key = ApiKey.generate(name="in-process", agent_ids=[AGENT])[1]
    response = Client(headers={"Authorization": f"Bearer {key}"}).post(
        f"/api/v1/agents/{AGENT}/chat/completions",
        {"model": "m", "messages": HISTORY, "metadata": MEMORY, "stream": True},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.streaming
    response.close()  # the server gave up before sending a byte
    call = _one_call(store)
    assert call["outcome"] == "client_disconnected" and call["ingest_job_id"]


def test_the_drain_waits_for_a_turn_the_server_has_not_handed_over_yet(
    client: openai.OpenAI,
    upstream: FakeOpenAI,
    store: MemoryStore,
    gene: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
):
    """The server closes a response (and so hands its turn to the pool) after the client
    may have read it. A drain in that gap (a test's teardown) must still wait for the
    turn: it used to see nothing in flight, and the turn was filed after the test, under
    the next test's settings (an empty `MONGODB_URI` there started a development store)."""
    from memory_admin.api.v1 import chat

    original = chat._AfterSendResponse.close

    def late_close(self: Any) -> None:
        time.sleep(1.0)  # the server is slow to close; the client has the answer
        original(self)

    monkeypatch.setattr(chat._AfterSendResponse, "close", late_close)
    upstream.reply("Rust, for firmware.")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt", messages=HISTORY, metadata=MEMORY
    )
    assert raw.parse().choices[0].message.content == "Rust, for firmware."
    assert chat.after_send_drain(timeout=20)
    [call] = _calls(store, "s-1")  # filed before the drain returned, not eventually
    assert str(call["_id"]) == raw.headers["X-Memory-Call-Id"]
