"""The context log: every context answer has a `context_call_id`; the calls are listed by
user and session, kept `MEMORY_CONTEXT_LOG_DAYS`, purged by forget-user."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from bson import ObjectId
from django.test import Client

from streams.core.documents import utcnow
from streams.memory.consolidation import consolidation_edit
from streams.store import MemoryStore, write_behind
from tests.api.conftest import API, assert_error
from tests.chat_support import chat_clients, chat_key, client, upstream
from tests.factories import ObservationFactory, ScopeFactory
from tests.task_mode import settle

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_CONTEXT_LOG_DAYS = 7


def _context(client: Client, body: dict, agent: str = "agent-1"):
    return client.post(
        f"{API}/agents/{agent}/context", data=json.dumps(body), content_type="application/json"
    )


def _calls(client: Client, agent: str = "agent-1", **query: str):
    write_behind.flush()  # written behind the answer: a test does not wait a second
    return client.get(f"{API}/agents/{agent}/context-calls", query)


def _memory(store: MemoryStore) -> dict:
    user = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1", display_name="Gene")
    consolidation_edit(
        store=store, scope=user, text="Gene likes short answers.", expected_version=0, actor="t"
    )
    rust = ObservationFactory.create(store=store, scope=user, content="Gene is learning Rust.")
    store.scopes.update_fields(ObjectId(user.id), {"pending_observation_ids": []})
    return {"user": user, "rust": rust}


def test_each_context_answer_is_recorded_with_what_the_agent_was_given(
    api: Client, store: MemoryStore
) -> None:
    data = _memory(store)
    answer = _context(
        api, {"user_id": "u1", "session_id": "s1", "message": "What did I tell you about Rust?"}
    )
    assert answer.status_code == 200, answer.content
    call_id = answer.json()["context_call_id"]
    assert ObjectId.is_valid(call_id)

    listed = _calls(api, user_id="u1")
    assert listed.status_code == 200, listed.content
    (call,) = listed.json()["items"]
    assert call["id"] == call_id
    assert call["xml"] == answer.json()["context"]
    assert call["retrieval"]["triggered"] is True
    assert call["retrieval"]["reason"] == answer.json()["retrieval"]["reason"]
    assert call["retrieved_ids"] == [data["rust"].id]
    assert call["caller"] == "api:test-key"
    assert call["source"] == "context"
    assert call["session_id"] == "s1" and call["message"] == "What did I tell you about Rust?"
    assert call["tokens"] == -(-len(call["xml"]) // 4)
    names = [s["name"] for s in call["sections"]]
    assert "UserMemory" in names and "RetrievedObservations" in names
    assert all(s["tokens"] > 0 for s in call["sections"])


def test_calls_are_listed_by_user_and_by_session_newest_first_in_pages(
    api: Client, store: MemoryStore
) -> None:
    _memory(store)
    ids = []
    for n, session in enumerate(["s1", "s1", "s2"]):
        body = {"user_id": "u1", "session_id": session, "message": f"hello {n}"}
        ids.append(_context(api, body).json()["context_call_id"])
    _context(api, {"user_id": "u2", "session_id": "s9", "message": "hi"})

    first = _calls(api, user_id="u1", limit="2").json()
    assert [c["id"] for c in first["items"]] == [ids[2], ids[1]]
    second = _calls(api, user_id="u1", limit="2", cursor=first["next_cursor"]).json()
    assert [c["id"] for c in second["items"]] == [ids[0]]
    assert second["next_cursor"] is None

    by_session = _calls(api, session_id="s1").json()["items"]
    assert [c["id"] for c in by_session] == [ids[1], ids[0]]
    everyone = _calls(api).json()["items"]
    assert len(everyone) == 4
    future = (utcnow() + timedelta(minutes=5)).isoformat()
    assert _calls(api, since=future).json()["items"] == []


def test_chat_answers_carry_their_context_call_id(api: Client, store: MemoryStore) -> None:
    from streams.context.chat import ChatMemory, chat_prepare

    _memory(store)
    store = MemoryStore(store.client, store.db.name, context_log_days=7)
    turn = chat_prepare(
        store=store,
        agent_id="agent-1",
        memory=ChatMemory(user_id="u1", session_id="s-chat"),
        messages=[{"role": "user", "content": "What did I tell you about Rust?"}],
        actor="api:chat-key",
    )
    assert turn.memory_status == "injected"
    (call,) = _calls(api, session_id="s-chat").json()["items"]
    assert call["id"] == turn.context_call_id
    assert (call["source"], call["caller"]) == ("chat", "api:chat-key")
    assert call["xml"] == turn.context


def test_with_the_log_off_the_id_is_null_and_nothing_is_kept(
    api: Client, store: MemoryStore, settings
) -> None:
    settings.MEMORY_CONTEXT_LOG_DAYS = 0
    _memory(store)
    answer = _context(api, {"user_id": "u1", "message": "hello"})
    assert answer.status_code == 200
    assert answer.json()["context_call_id"] is None
    assert _calls(api, user_id="u1").json()["items"] == []


def test_calls_older_than_the_retention_are_not_listed_and_expire(
    api: Client, store: MemoryStore
) -> None:
    old = utcnow() - timedelta(days=8)
    store.context_calls.collection.insert_one(
        {
            "_id": ObjectId.from_datetime(old),
            "agent_id": "agent-1",
            "user_id": "u1",
            "created_at": old,
            "expires_at": old + timedelta(days=7),
            "xml": "<MemoryContext>\n</MemoryContext>",
        }
    )
    _context(api, {"user_id": "u1", "message": "hello"})
    items = _calls(api, user_id="u1").json()["items"]
    assert len(items) == 1 and items[0]["created_at"] > old.isoformat()
    recorded = store.context_calls.collection.find_one({"_id": ObjectId(items[0]["id"])})
    kept = recorded["expires_at"] - recorded["created_at"]
    assert kept == timedelta(days=7)
    ttl = store.context_calls.collection.index_information()["expires_at_ttl"]
    assert ttl["expireAfterSeconds"] == 0


def test_forget_user_purges_their_calls_even_those_not_yet_written(
    api: Client, store: MemoryStore, django_capture_on_commit_callbacks
) -> None:
    _memory(store)
    _context(api, {"user_id": "u1", "message": "hello"})
    _context(api, {"user_id": "u2", "message": "hello"})
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"{API}/agents/agent-1/users/u1")
    settle(store)
    assert response.status_code == 202
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert job["result"]["deleted"]["memory_context_calls"] == 1
    assert _calls(api, user_id="u1").json()["items"] == []
    assert len(_calls(api, user_id="u2").json()["items"]) == 1


def test_a_log_write_that_fails_never_fails_the_call_and_is_counted(
    api: Client, store: MemoryStore, monkeypatch
) -> None:
    _memory(store)
    from streams.store.context_calls import ContextCallRepository

    def broken(self, doc):
        raise RuntimeError("the queue is broken")

    before = write_behind.failures()
    monkeypatch.setattr(ContextCallRepository, "record", broken)
    answer = _context(api, {"user_id": "u1", "message": "hello"})
    assert answer.status_code == 200, answer.content
    assert answer.json()["context"].startswith("<MemoryContext>")
    assert write_behind.failures() == before + 1


def test_a_record_the_store_refuses_is_logged_and_counted(store: MemoryStore) -> None:
    same = ObjectId()
    docs = [{"_id": same, "agent_id": "a"}, {"_id": same, "agent_id": "a"}]
    before = write_behind.failures()
    write_behind.write_now(store.context_calls.collection, docs)  # a duplicate key: refused
    assert write_behind.failures() == before + 1
    assert store.context_calls.collection.count_documents({"_id": same}) == 1


def test_bad_queries_are_422_and_other_agents_404(api: Client, limited_api: Client) -> None:
    assert_error(_calls(api, cursor="not a cursor!"), 422, "validation_error")
    assert_error(_calls(api, since="yesterday"), 422, "validation_error")
    assert_error(_calls(api, limit="0"), 422, "validation_error")
    assert_error(_calls(api, user_id="x" * 300), 422, "validation_error")
    assert_error(_calls(limited_api, agent="agent-2"), 404, "not_found")
    assert _calls(limited_api, agent="agent-1").status_code == 200


def test_the_chat_endpoint_answers_its_context_call_id_in_a_header(
    client, upstream, store: MemoryStore, settings
) -> None:
    from tests.chat_support import AGENT, MEMORY

    user = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    consolidation_edit(
        store=store, scope=user, text="Gene prefers short answers.", expected_version=0, actor="t"
    )
    upstream.reply("Short.")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt", messages=[{"role": "user", "content": "hello"}], metadata=MEMORY
    )
    call_id = raw.headers["X-Memory-Context-Call-Id"]
    assert ObjectId.is_valid(call_id)
    write_behind.flush()
    (call,) = store.context_calls.page(
        agent_id=AGENT, session_id="s-1", since=utcnow() - timedelta(hours=1), before=None, limit=5
    )
    assert str(call["_id"]) == call_id and call["source"] == "chat"
    assert "Gene prefers short answers." in call["xml"]


# -- replay (as_of) and the "as it was at" page ---------------------------------------


def test_as_of_replays_the_context_then_and_is_not_logged(api: Client, store: MemoryStore) -> None:
    import time

    user = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1", display_name="Gene")
    consolidation_edit(
        store=store, scope=user, text="Gene likes tea.", expected_version=0, actor="t"
    )
    time.sleep(0.005)
    then = utcnow()
    time.sleep(0.005)
    consolidation_edit(
        store=store, scope=user, text="Gene likes coffee.", expected_version=1, actor="t"
    )

    answer = _context(api, {"user_id": "u1", "message": "hello", "as_of": then.isoformat()})

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert "Gene likes tea." in body["context"] and "coffee" not in body["context"]
    assert body["context_call_id"] is None
    assert _calls(api, user_id="u1").json()["items"] == []
    now = _context(api, {"user_id": "u1", "message": "hello"}).json()
    assert "Gene likes coffee." in now["context"]


def test_as_of_in_the_future_or_before_the_agent_is_a_422(api: Client, store: MemoryStore) -> None:
    ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    future = (utcnow() + timedelta(hours=1)).isoformat()
    long_ago = (utcnow() - timedelta(days=365)).isoformat()
    for as_of, text in ((future, "future"), (long_ago, "before the agent existed")):
        body = {"user_id": "u1", "message": "hi", "as_of": as_of}
        error = assert_error(_context(api, body), 422, "validation_error")
        assert text in error["message"]
    for bad in ("yesterday", "2026-01-01T00:00:00", 12):  # not a time; no timezone
        body = {"user_id": "u1", "message": "hi", "as_of": bad}
        assert_error(_context(api, body), 422, "validation_error")
