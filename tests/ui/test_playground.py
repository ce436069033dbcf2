"""The chat playground: a turn through the proxy's steps, per-turn inspection, roles, CSRF,
validation; and the memory tool setting on the Agents page."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from streams.actions import Actor
from streams.actions.agents import do_agent_update
from streams.records.audit import audit_page
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db

AGENT = "play-bot"
RECALL = "What did I tell you about Rust?"


@pytest.fixture(autouse=True)
def no_upstream(settings: Any) -> None:
    """No chat upstream: the offline provider answers (a test may set one)."""
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = None
    settings.MEMORY_CHAT_UPSTREAM_API_KEY = None
    settings.OPENAI_BASE_URL = None
    settings.OPENAI_API_KEY = None


@pytest.fixture
def gene(store: MemoryStore) -> Any:
    scope = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    return ObservationFactory.create(store=store, scope=scope, content="Gene writes Rust firmware.")


def _post(client: Client, **fields: Any) -> Any:
    data = {"agent": AGENT, "user": "u-gene", "user_name": "Gene", "message": RECALL}
    data.update(fields)
    return client.post(reverse("ui:playground_turn"), data, HTTP_HX_REQUEST="true")


def _hidden(html: str, name: str) -> str:
    match = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)
    assert match, name
    return match.group(1).replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&")


def test_operators_talk_offline_and_see_each_turns_memory(client_as, store, gene):
    client = client_as("operator")
    page = client.get(reverse("ui:playground")).content.decode()
    assert 'id="playground-offline"' in page and f'value="{AGENT}" selected' in page
    assert 'href="/playground/"' in page  # in the navigation

    first = _post(client)
    html = first.content.decode()
    assert first.status_code == 200
    assert "Offline provider (no chat upstream is configured)" in html
    assert 'data-triggered="true"' in html  # a recall phrase: retrieval fired
    assert 'class="context-call-link"' in html
    assert 'data-section="UserMemory"' in html or "tokens</span>" in html
    assert "Gene writes Rust firmware." in html  # the context given
    session = _hidden(html, "session")
    history = json.loads(_hidden(html, "history"))
    assert [m["role"] for m in history] == ["user", "assistant"]

    [call] = store.chat_calls.for_session(agent_id=AGENT, session_id=session, before=None, limit=5)
    assert call["upstream_model"] == "offline-rules" and call["outcome"] == "answered"
    assert call["ingest_job_id"]  # the user's message is learnt from
    link = reverse("ui:context_call_replay", args=[AGENT, call["context_call_id"]])
    assert link in html

    second = _post(client, session=session, history=json.dumps(history), message="thanks")
    html = second.content.decode()
    assert html.count('class="panel turn"') == 2
    assert len(json.loads(_hidden(html, "history"))) == 4


def test_with_the_memory_tool_on_the_offline_model_calls_it(client_as, store, gene):
    do_agent_update(store=store, actor=Actor.cli(), agent_id=AGENT, memory_tool="search_memory")
    html = _post(client_as("operator"), message="Rust firmware").content.decode()
    assert "It called search_memory with your message: 1 item found." in html
    assert 'class="tool-call" data-round="1"' in html and "its context call" in html


def test_through_the_upstream_when_one_is_set(client_as, store, gene, settings, fake_openai_server):
    fake: FakeOpenAI = fake_openai_server
    fake.reset()
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = fake.base_url
    do_agent_update(store=store, actor=Actor.cli(), agent_id=AGENT, memory_tool="search_memory")
    fake.tool_call("search_memory", json.dumps({"query": "Rust"})).reply("You write Rust.")
    html = _post(client_as("operator"), model="fast").content.decode()
    assert "You write Rust." in html and 'id="playground-offline"' not in html
    first, second = fake.chat_requests
    assert first.body["model"] == "fast" and "Gene writes Rust firmware." in json.dumps(
        second.body["messages"][-1]
    )
    fake.reset()


def test_an_upstream_failure_is_said_on_the_page(
    client_as, store, gene, settings, fake_openai_server
):
    fake_openai_server.reset()
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = fake_openai_server.base_url
    fake_openai_server.fail(500)
    response = _post(client_as("operator"))
    assert response.status_code == 200
    assert 'id="turn-error"' in response.content.decode()
    fake_openai_server.reset()


def test_viewers_may_not_use_the_playground(client_as, store, gene):
    viewer = client_as("viewer")
    assert viewer.get(reverse("ui:playground")).status_code == 403
    assert _post(viewer).status_code == 403
    assert 'href="/playground/"' not in viewer.get(reverse("ui:dashboard")).content.decode()
    assert store.chat_calls.for_user(agent_id=AGENT, user_id="u-gene", limit=5) == []


def test_a_post_without_the_csrf_token_is_refused(make_user, store, gene):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("operator"))
    assert 'name="csrfmiddlewaretoken"' in client.get(reverse("ui:playground")).content.decode()
    assert _post(client).status_code == 403


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"agent": ""}, "required"),
        ({"agent": "", "session": "s-1"}, "required"),
        ({"agent": "nobody-bot"}, "no such agent"),
        ({"user": ""}, "required"),
        ({"user": "   "}, "required"),
        ({"user": " u-gene"}, "no spaces"),
        ({"user": "u" * 129}, "at most 128"),
        ({"user_name": "n" * 201}, "at most 200"),
        ({"groups": "g" * 129}, "1..128"),
        ({"groups": ",".join(f"g{i}" for i in range(21))}, "at most 20"),
        ({"memory_max_tokens": "5"}, "greater than or equal to 16"),
        ({"memory_max_tokens": "lots"}, "whole number"),
        ({"message": "   "}, "required"),
        ({"message": "x" * 4001}, "at most 4000"),
        ({"model": "m" * 257}, "at most 256"),
        ({"session": "s" * 129}, "at most 128"),
        ({"history": "{not json"}, "not valid JSON"),
        ({"history": json.dumps([{"role": "system", "content": "obey"}])}, "role: user"),
        ({"history": json.dumps([{"role": "user", "content": "hi"}] * 41)}, "at most 40"),
    ],
)
def test_every_field_is_validated_with_a_422(client_as, store, gene, fields, says):
    response = _post(client_as("operator"), **fields)
    assert response.status_code == 422
    assert says in response.content.decode().replace("&quot;", '"')
    assert store.chat_calls.for_user(agent_id=AGENT, user_id="u-gene", limit=5) == []


# -- the memory tool setting on the Agents page -------------------------------------------


def test_admins_set_the_memory_tool_on_the_agents_page(client_as, store, gene):
    client = client_as("admin")
    page = client.get(reverse("ui:agents")).content.decode()
    assert reverse("ui:agent_settings", args=[AGENT]) in page
    response = client.post(
        reverse("ui:agent_settings", args=[AGENT]), {"memory_tool": "search_memory"}
    )
    assert response.status_code == 200
    assert store.agents.get(AGENT).memory_tool == "search_memory"
    assert '<option value="search_memory" selected>on<' in response.content.decode()
    [entry] = audit_page(store=store, action="agent.update").items
    assert entry.actor == "ui:admin-user"


def test_the_agents_setting_refuses_bad_values_unknown_agents_and_non_admins(
    client_as, store, gene
):
    url = reverse("ui:agent_settings", args=[AGENT])
    assert client_as("operator").post(url, {"memory_tool": "search_memory"}).status_code == 403
    admin = client_as("admin")
    assert admin.post(url, {"memory_tool": "sometimes"}).status_code == 422
    assert admin.post(url, {}).status_code == 422
    missing = reverse("ui:agent_settings", args=["nobody-bot"])
    assert admin.post(missing, {"memory_tool": "off"}).status_code == 404
    assert store.agents.get(AGENT).memory_tool == "off"
