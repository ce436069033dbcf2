"""Explicit forget (issue 42 item 4): "forget what I said about X" in a user's message
proposes a delete of the matching observations of that user's own scope (review, the
default) or deletes them at once (`MEMORY_FORGET_REQUESTS=apply`); the ingest answer and
the chat proxy (a header and the call record) say what was proposed or applied. Shared
scopes are never touched."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API
from tests.chat_support import AGENT, MEMORY, chat_clients, chat_key, client, upstream
from tests.eventually import eventually
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures
JSON = "application/json"
SALARY = "Gene's salary is 90k a year."
OTHER = "Gene plays chess on Sundays."


def _user_memory(store: MemoryStore, agent: str, user: str = "u-gene"):
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(agent, user))
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(agent, "g-1"))
    salary = observation_add(store=store, scope=scope, content=SALARY)
    other = observation_add(store=store, scope=scope, content=OTHER)
    shared = observation_add(store=store, scope=group, content="The team's salary budget is 2M.")
    return scope, salary, other, shared


def _ingest(api, agent: str, text: str, session: str = "s-9") -> dict[str, Any]:
    body = {
        "user_id": "u-gene",
        "messages": [{"id": f"{session}-m1", "role": "user", "content": text}],
    }
    response = api.post(
        f"{API}/agents/{agent}/sessions/{session}/messages", json.dumps(body), content_type=JSON
    )
    assert response.status_code == 202, response.content
    return response.json()


def _deleted(store: MemoryStore, observation_id: str) -> bool:
    found = store.observations.get(ObjectId(observation_id))
    return found is not None and found.deleted


def test_review_mode_proposes_and_a_person_approves(api, store):
    _, salary, other, shared = _user_memory(store, "agent-1")
    answer = _ingest(api, "agent-1", "Please forget what I said about my salary.")
    forget = answer["forget_request"]
    assert forget["status"] == "proposed" and forget["observation_ids"] == [salary.id]
    assert not _deleted(store, salary.id)
    queue = api.get(f"{API}/agents/agent-1/review").json()["items"]
    proposal = next(o for o in queue if o["id"] == forget["review_id"])
    assert proposal["review"]["reasons"] == ["forget_request"]
    assert SALARY not in proposal["content"]  # the proposal repeats no text
    decided = api.post(
        f"{API}/observations/{proposal['id']}/review",
        json.dumps({"decision": "approve"}),
        content_type=JSON,
    )
    assert decided.status_code == 200, decided.content
    assert _deleted(store, salary.id)
    assert not _deleted(store, other.id) and not _deleted(store, shared.id)
    assert _deleted(store, proposal["id"])  # the proposal itself leaves
    entries = api.get(f"{API}/audit", {"object_id": salary.id}).json()["items"]
    assert any(e["summary"].get("reason") == "forget_request" for e in entries)


def test_review_mode_rejected_keeps_everything(api, store):
    _, salary, _, _ = _user_memory(store, "agent-1")
    forget = _ingest(api, "agent-1", "Forget what I told you about my salary.")["forget_request"]
    api.post(
        f"{API}/observations/{forget['review_id']}/review",
        json.dumps({"decision": "reject"}),
        content_type=JSON,
    )
    assert not _deleted(store, salary.id)


def test_apply_mode_deletes_at_once_and_only_the_users_own(api, store, settings):
    settings.MEMORY_FORGET_REQUESTS = "apply"
    _, salary, other, shared = _user_memory(store, "agent-1")
    forget = _ingest(api, "agent-1", "Actually, forget what I said about my salary.")
    assert forget["forget_request"] == {
        "status": "applied",
        "observation_ids": [salary.id],
        "review_id": None,
    }
    assert _deleted(store, salary.id)
    assert not _deleted(store, other.id) and not _deleted(store, shared.id)
    hits = api.get(f"{API}/agents/agent-1/search", {"q": "salary", "user_id": "u-gene"}).json()
    assert SALARY not in json.dumps(hits)


@pytest.mark.parametrize(
    "text", ["Forget what I said about the moon landing.", "I always forget my keys."]
)
def test_nothing_matches_or_no_request(api, store, text):
    _, salary, _, _ = _user_memory(store, "agent-1")
    forget = _ingest(api, "agent-1", text)["forget_request"]
    if "moon" in text:
        assert forget == {"status": "nothing_found", "observation_ids": [], "review_id": None}
    else:
        assert forget is None
    assert not _deleted(store, salary.id)


def test_forget_that_drops_the_last_observation_of_the_session(api, store, settings):
    settings.MEMORY_FORGET_REQUESTS = "apply"
    scope, salary, _, _ = _user_memory(store, "agent-1")
    store.observations.update_fields(ObjectId(salary.id), {"source_session_id": "s-7"})
    forget = _ingest(api, "agent-1", "Forget that.", session="s-7")["forget_request"]
    assert forget["status"] == "applied" and forget["observation_ids"] == [salary.id]
    other_session = _ingest(api, "agent-1", "Forget that.", session="s-8")["forget_request"]
    assert other_session["status"] == "nothing_found"


def test_the_chat_proxy_says_what_it_proposed(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore
):
    _, salary, _, _ = _user_memory(store, AGENT)
    upstream.reply("Done, I will forget it.")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt",
        messages=[{"role": "user", "content": "Please forget what I said about my salary."}],
        metadata=MEMORY,
    )
    assert raw.headers["X-Memory-Forget"] == "proposed; observations=1"
    calls = eventually(
        lambda: store.chat_calls.for_session(
            agent_id=AGENT, session_id=MEMORY["session_id"], before=None, limit=5
        ),
        until=lambda c: len(c) == 1,
    )
    record = calls[0]["memory_request"]
    assert record["kind"] == "forget" and record["topic"] == "my salary"
    assert record["forget"]["status"] == "proposed"
    assert record["forget"]["observation_ids"] == [salary.id]
    assert not _deleted(store, salary.id)
