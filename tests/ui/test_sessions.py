"""The session page and the search inspector show what the chat endpoint injected per call.

The calls are made the way an agent makes them: the real `openai` client against the live
server, the fake OpenAI server as the upstream; the pages are read as an operator would.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from streams.store import MemoryStore
from tests.chat_support import AGENT, MEMORY, chat_clients, chat_key, upstream
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.ui.helpers import HTMX

__all__ = ["chat_clients", "chat_key", "upstream"]  # fixtures, imported for this module


@pytest.fixture
def two_calls(chat_clients: Any, upstream: FakeOpenAI, store: MemoryStore) -> list[dict[str, Any]]:
    """Gene's memory, then two calls in session s-1: a greeting, and a recall question."""
    scope = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    ObservationFactory.create(store=store, scope=scope, content="Gene maintains the Rust parser.")
    for n in range(10):  # newer ones fill "recent", so the Rust one is found by retrieval
        ObservationFactory.create(store=store, scope=scope, content=f"Gene fed the cat {n}.")
    client = chat_clients()
    upstream.reply("Hello Gene.").reply("You maintain the Rust parser.")
    for text in ("good morning", "what did I tell you about the Rust parser?"):
        client.chat.completions.create(
            model="memory-gpt", messages=[{"role": "user", "content": text}], metadata=MEMORY
        )
    return eventually(
        lambda: store.chat_calls.for_session(
            agent_id=AGENT, session_id="s-1", before=None, limit=5
        ),
        until=lambda calls: len(calls) == 2,
    )


def _session_url() -> str:
    return reverse("ui:session_detail", args=[AGENT, "s-1"])


def test_the_session_page_shows_each_calls_context_retrieval_and_ingest(
    client_as, two_calls: list[dict[str, Any]]
):
    recall, greeting = two_calls
    html = client_as("viewer").get(_session_url()).content.decode()
    assert "<html" in html and "Session <code>s-1</code>" in html
    assert html.index(f'data-call-id="{recall["_id"]}"') < html.index(
        f'data-call-id="{greeting["_id"]}"'
    )  # newest first
    assert "recall phrase" in html and "<strong>fired</strong>" in html
    assert recall["retrieval"]["reason"] in html and greeting["retrieval"]["reason"] in html
    assert f'<td class="num" data-context-tokens>{recall["context_tokens"]}</td>' in html
    assert "Gene maintains the Rust parser." in html  # the retrieved observation, by content
    assert "&lt;RetrievedObservations&gt;" in html  # the injected XML, escaped
    assert "memory-gpt → fake-upstream-model" in html
    assert html.count("not ingested") == 0 and "“You maintain the Rust parser.”" in html


def test_the_htmx_pager_swaps_only_the_calls(client_as, two_calls, monkeypatch):
    monkeypatch.setattr("memory_admin.ui.sessions.PAGE_SIZE", 1)
    client = client_as("viewer")
    first = client.get(_session_url(), **HTMX).content.decode()
    assert first.lstrip().startswith('<div id="chat-calls"') and "<html" not in first
    assert first.count("data-call-id=") == 1 and 'rel="next"' in first
    cursor = first.split("?cursor=")[1].split('"')[0]
    older = client.get(_session_url(), {"cursor": cursor}, **HTMX).content.decode()
    assert f'data-call-id="{two_calls[1]["_id"]}"' in older
    assert f'data-call-id="{two_calls[0]["_id"]}"' not in older


def test_a_forged_cursor_is_a_message_not_a_500(client_as, two_calls):
    response = client_as("viewer").get(_session_url(), {"cursor": "bm90LWpzb24"})
    assert response.status_code == 200 and "malformed cursor" in response.content.decode()


def test_the_session_page_needs_a_role(client_as, two_calls):
    assert client_as(None).get(_session_url()).status_code == 403


def test_an_unknown_session_is_an_empty_page(client_as, db):
    html = client_as("viewer").get(reverse("ui:session_detail", args=[AGENT, "nope"])).content
    assert b"No chat calls in this session yet" in html


def test_the_search_inspector_lists_the_users_recent_chat_calls(client_as, two_calls):
    params = {"agent": AGENT, "user": "u-gene", "message": "Rust"}
    html = client_as("viewer").get(reverse("ui:search"), params).content.decode()
    assert 'id="user-chat-calls"' in html
    assert f'href="{_session_url()}"' in html
    assert "fired: 1 retrieved" in html
