"""`create_api_key` / `revoke_api_key`: the key alone on the last line, working until revoked."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory_admin.models import ApiKey
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
    raw = create_key("--name", "bot", "--agent", "agent-1", "--agent", "agent-3")
    assert ApiKey.objects.get(name="bot").agent_scope == {"agent-1", "agent-3"}
    other = ScopeFactory.create(store=store, agent_id="agent-2")
    client = bearer_client(raw)
    assert client.get(f"{API}/agents/agent-1/scopes").status_code == 200
    assert_error(client.get(f"{API}/scopes/{other.id}"), 404, "not_found")


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
