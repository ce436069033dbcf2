"""`create_api_key` / `revoke_api_key`: the key alone on the last line, working until revoked."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory_admin.models import ApiKey
from streams.records.audit import audit_page
from tests.api.conftest import API, assert_error, bearer_client
from tests.factories import ScopeFactory


def create_key(*args: str) -> str:
    out = StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue().rstrip("\n").splitlines()[-1]


def test_create_api_key_prints_a_working_key_on_the_last_line(db, store):
    raw = create_key("--name", "bot")
    assert raw.startswith("mk_") and " " not in raw
    key = ApiKey.objects.get(name="bot")
    assert key.agent_scope is None and raw not in (key.key_hash, key.prefix)
    assert bearer_client(raw).get(f"{API}/agents/agent-1/scopes").status_code == 200


def test_create_api_key_limited_to_agents(db, store):
    other = ScopeFactory.create(store=store, agent_id="agent-2")
    call_command("create_agent", "agent-1", stdout=StringIO())
    raw = create_key("--name", "bot", "--agent", "agent-1", "--agent", "agent-3", "--create-agent")
    assert ApiKey.objects.get(name="bot").agent_scope == {"agent-1", "agent-3"}
    assert store.agents.get("agent-3") is not None  # asked for, so created
    client = bearer_client(raw)
    assert client.get(f"{API}/agents/agent-1/scopes").status_code == 200
    assert_error(client.get(f"{API}/scopes/{other.id}"), 404, "not_found")


def test_create_api_key_refuses_an_agent_nobody_created(db, store):
    """Issue 40: `--agent brand-new-bot` (a typo, say) made a key for an empty agent."""
    ScopeFactory.create(store=store, agent_id="support-bot")
    with pytest.raises(CommandError, match="no agent 'suport-bot'.*create_agent"):
        create_key("--name", "typo", "--agent", "support-bot", "--agent", "suport-bot")
    assert not ApiKey.objects.exists() and store.agents.get("suport-bot") is None
    create_key("--name", "right", "--agent", "support-bot")  # a known agent needs nothing


def test_create_agent_makes_an_empty_agent_once_audited(db, store):
    out = StringIO()
    call_command("create_agent", "brand-new-bot", stdout=out)
    assert "Created agent 'brand-new-bot'" in out.getvalue()
    agent = store.agents.get("brand-new-bot")
    assert agent is not None and agent.scope_count == 0
    [entry] = audit_page(store=store, action="agent.create").items
    assert (entry.actor, entry.object_id) == ("cli", "brand-new-bot")
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_agent", "brand-new-bot", stdout=StringIO())
    for bad in ("", " padded ", "a" * 129):
        with pytest.raises(CommandError, match="agent_id must be"):
            call_command("create_agent", bad, stdout=StringIO())


def test_create_api_key_refuses_an_existing_name(db):
    create_key("--name", "bot")
    with pytest.raises(CommandError, match="exists already"):
        create_key("--name", "bot")
    assert ApiKey.objects.count() == 1


def test_create_api_key_refuses_overlong_agent_ids(db):
    with pytest.raises(CommandError, match="128"):
        create_key("--name", "bot", "--agent", "a" * 129)


def test_revoke_api_key_makes_it_401(db, store):
    raw = create_key("--name", "bot")
    client = bearer_client(raw)
    assert client.get(f"{API}/agents/agent-1/scopes").status_code == 200
    out = StringIO()
    call_command("revoke_api_key", "bot", stdout=out)
    assert "Revoked" in out.getvalue()
    assert_error(client.get(f"{API}/agents/agent-1/scopes"), 401, "unauthorized")
    call_command("revoke_api_key", "bot", stdout=StringIO())  # again: harmless


def test_revoke_unknown_key_is_an_error(db):
    with pytest.raises(CommandError, match="no API key named 'ghost'"):
        call_command("revoke_api_key", "ghost", stdout=StringIO())
