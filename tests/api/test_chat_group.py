"""A group chat through the chat endpoint: two people take turns in one session, each turn
is filed under the person who spoke, and forgetting one of them leaves the other intact.

The real `openai` client is the caller; the fake OpenAI server is both the chat upstream
and the memory's own model (its script is consumed in order: two answers, then the
extraction).
"""

from __future__ import annotations

from typing import Any

import openai

from streams.jobs import job_get
from streams.memory.scopes import ScopeKey
from streams.people.privacy import forget_user_request, forget_user_run
from streams.records.audit import audit_page
from streams.store import MemoryStore
from tests.chat_support import AGENT, chat_clients, chat_key, upstream
from tests.eventually import eventually
from tests.fakes.openai_server import FakeOpenAI
from tests.streams.memory.test_speakers import form, observations
from tests.streams.people.test_privacy import every_memory_document
from tests.task_mode import run_job, settle

__all__ = ["chat_clients", "chat_key", "upstream"]  # fixtures, imported for this module

SESSION = "team-room"
GROUPS = "g-eden=Eden"


def turn(client: openai.OpenAI, upstream: FakeOpenAI, user: str, name: str, text: str) -> None:
    upstream.reply(f"Noted, {name}.")
    answer = client.chat.completions.create(
        model="memory-gpt",
        messages=[{"role": "user", "content": text}],
        metadata={"user_id": user, "user_name": name, "session_id": SESSION, "groups": GROUPS},
    )
    assert answer.choices[0].message.content == f"Noted, {name}."


def test_a_two_person_group_chat_is_filed_per_speaker_and_forgetting_one_keeps_the_other(
    chat_clients: Any, upstream: FakeOpenAI, fake_openai: FakeOpenAI, store: MemoryStore, settings
):
    settings.MEMORY_FORMATION_MIN_MESSAGES = 100  # the test forms the session itself
    alice, bob = chat_clients(), chat_clients()
    turn(alice, upstream, "alice", "Alice", "I am allergic to peanuts.")
    turn(bob, upstream, "bob", "Bob", "I only drink oolong tea.")

    buffered = eventually(
        lambda: store.sessions.unformed(AGENT, SESSION, limit=50), until=lambda m: len(m) == 4
    )
    entries = eventually(
        lambda: audit_page(store=store, action="session.ingest", limit=10).items,
        until=lambda items: len(items) == 2,
    )
    assert {(e.actor, e.summary["user_id"], e.summary["via"]) for e in entries} == {
        ("api:chat-agent", "alice", "chat"),
        ("api:chat-agent", "bob", "chat"),
    }
    said = {(m.role, m.content): m.user_id for m in buffered}
    assert said[("user", "I am allergic to peanuts.")] == "alice"
    assert said[("user", "I only drink oolong tea.")] == "bob"

    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Alice is allergic to peanuts.", "scope": "individual:alice"},
                {"content": "Bob only drinks oolong tea.", "scope": "individual:bob"},
                {"content": "Eden orders no peanuts.", "scope": "group:Eden", "about": ["alice"]},
            ]
        }
    )
    run = form(store, session=SESSION, agent=AGENT)
    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    said_in = {m.content: m.message_id for m in buffered}
    assert f"[{said_in['I am allergic to peanuts.']}] Alice (alice): I am allergic" in prompt
    assert f"[{said_in['I only drink oolong tea.']}] Bob (bob): I only drink oolong" in prompt
    assert run.result["observations"] == 3
    assert observations(store, ScopeKey.individual(AGENT, "alice")) == [
        ("Alice is allergic to peanuts.", ["alice"])
    ]
    assert observations(store, ScopeKey.individual(AGENT, "bob")) == [
        ("Bob only drinks oolong tea.", ["bob"])
    ]

    job = forget_user_request(store=store, agent_id=AGENT, user_id="alice", actor="api:test")
    run_job(store=store, job_id=job.id, work=lambda r: forget_user_run(store=store, run=r))
    settle(store)
    assert job_get(store=store, job_id=job.id).status == "succeeded"

    assert "peanuts" not in every_memory_document(store)
    assert observations(store, ScopeKey.individual(AGENT, "bob")) == [
        ("Bob only drinks oolong tea.", ["bob"])
    ]
