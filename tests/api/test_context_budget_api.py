"""`max_tokens` on POST /context and `metadata.memory_max_tokens` on chat, through HTTP."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from streams.memory.consolidation import consolidation_edit
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error
from tests.chat_support import AGENT, MEMORY, chat_clients, chat_key, client, upstream
from tests.factories import ObservationFactory, ScopeFactory

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures

LONG = " ".join(f"Gene said thing {n} about tea." for n in range(80))


@pytest.fixture(autouse=True)
def log_on(settings):
    settings.MEMORY_CONTEXT_LOG_DAYS = 7


def _context(api: Client, body: dict):
    return api.post(
        f"{API}/agents/agent-1/context", data=json.dumps(body), content_type="application/json"
    )


def test_max_tokens_fits_the_context_and_says_what_was_dropped(
    api: Client, store: MemoryStore
) -> None:
    user = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    consolidation_edit(store=store, scope=user, text=LONG, expected_version=0, actor="t")
    for n in range(10):
        ObservationFactory.create(store=store, scope=user, content=f"Gene bought tea {n}.")
    full = _context(api, {"user_id": "u1", "message": "hello"}).json()
    assert full["dropped"] == [] and full["tokens"] > 200

    body = _context(api, {"user_id": "u1", "message": "hello", "max_tokens": 200}).json()

    assert body["tokens"] <= 200 and len(body["context"]) <= 800
    assert body["dropped"][0].startswith("recent:")
    assert any(d.startswith("user:last ") for d in body["dropped"])


@pytest.mark.parametrize("bad", [0, 15, -1, 10**9, "many", 1.5, True])
def test_a_bad_budget_is_a_422(api: Client, bad: object) -> None:
    response = _context(api, {"user_id": "u1", "message": "hello", "max_tokens": bad})
    assert_error(response, 422, "validation_error")


def test_chat_takes_its_memory_budget_from_metadata(client, upstream, store: MemoryStore) -> None:
    user = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene")
    consolidation_edit(store=store, scope=user, text=LONG, expected_version=0, actor="t")
    for n in range(10):
        ObservationFactory.create(store=store, scope=user, content=f"Gene bought tea {n}.")
    upstream.reply("ok")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt",
        max_tokens=50,  # the answer's limit: forwarded as sent
        messages=[{"role": "user", "content": "hello"}],
        metadata={**MEMORY, "memory_max_tokens": "120"},
    )
    assert raw.headers["X-Memory-Dropped"].startswith("recent:")
    sent = upstream.chat_requests[-1].body
    context = sent["messages"][0]["content"]
    assert -(-len(context) // 4) <= 120
    assert sent["max_tokens"] == 50 and "metadata" not in sent  # our key is not forwarded


def test_chat_refuses_a_bad_memory_budget(client, upstream) -> None:
    import openai

    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.chat.completions.create(
            model="memory-gpt",
            messages=[{"role": "user", "content": "hello"}],
            metadata={**MEMORY, "memory_max_tokens": "lots"},
        )
    assert "memory_max_tokens" in str(caught.value.body)


def test_a_small_budget_keeps_the_users_own_memory_before_groups_and_the_collective(
    api: Client, store: MemoryStore
) -> None:
    """Issue 40: a 120-token budget dropped the user's "prefers short answers" and kept
    generic collective text. The user's own memory goes last, then the groups', and the
    collective's and shards' go first."""
    generic = " ".join(f"Customers often ask about plan {n} pricing." for n in range(6))
    collective = ScopeFactory.create(store=store, agent_id="agent-1", collective=True)
    consolidation_edit(store=store, scope=collective, text=generic, expected_version=0, actor="t")
    ObservationFactory.create(store=store, scope=collective, content="Plans renew monthly.")
    shard = ScopeFactory.create(store=store, agent_id="agent-1", shard=True, name="billing")
    consolidation_edit(store=store, scope=shard, text=generic, expected_version=0, actor="t")
    group = ScopeFactory.create(store=store, agent_id="agent-1", group=True, group_id="g1")
    consolidation_edit(
        store=store, scope=group, text="The team ships on Fridays.", expected_version=0, actor="t"
    )
    user = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    ObservationFactory.create(store=store, scope=user, content="Gene prefers short answers.")
    body = {"user_id": "u1", "message": "hello", "groups": [{"id": "g1", "name": "Team"}]}
    full = _context(api, body).json()
    assert "prefers short answers" in full["context"] and "plan 5 pricing" in full["context"]

    small = _context(api, {**body, "max_tokens": 120}).json()

    assert small["tokens"] <= 120
    assert "Gene prefers short answers." in small["context"]
    assert "collective" in small["dropped"] and "shard:billing" in small["dropped"]
    assert "plan 5 pricing" not in small["context"]
    dropped = small["dropped"]
    if "group:g1" in dropped:
        assert dropped.index("collective") < dropped.index("group:g1")
    else:
        assert "ships on Fridays" in small["context"]
