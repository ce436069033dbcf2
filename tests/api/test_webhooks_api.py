"""Webhooks through the HTTP contract: create (secret once), list, PATCH, DELETE, the
delivery log, SSRF refusals and bad input."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memory_admin.integrations.webhooks import deliver_due
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error

EVENTS = ["observation.created"]


@pytest.fixture(autouse=True)
def private_allowed(settings):
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS = 1


def _create(api: Client, body: dict, agent: str = "agent-1"):
    return api.post(
        f"{API}/agents/{agent}/webhooks", data=json.dumps(body), content_type="application/json"
    )


def _patch(api: Client, hook_id: str, body: dict):
    return api.patch(
        f"{API}/webhooks/{hook_id}", data=json.dumps(body), content_type="application/json"
    )


def test_the_secret_is_shown_once_and_hooks_are_listed_without_it(api: Client) -> None:
    created = _create(api, {"url": "http://127.0.0.1:9/hook", "events": EVENTS})
    assert created.status_code == 201, created.content
    hook = created.json()
    assert hook["secret"].startswith("whsec_") and hook["active"] is True
    listed = api.get(f"{API}/agents/agent-1/webhooks").json()
    assert [h["id"] for h in listed["items"]] == [hook["id"]]
    assert "secret" not in listed["items"][0]


def test_patch_active_false_stops_deliveries_and_the_log_shows_it(
    api: Client, store: MemoryStore
) -> None:
    hook = _create(api, {"url": "http://127.0.0.1:9/hook", "events": EVENTS}).json()
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("agent-1", "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    response = _patch(api, hook["id"], {"active": False})
    assert response.status_code == 200 and response.json()["active"] is False

    deliver_due(store)  # nothing listens on port 9; an inactive hook is not even tried

    log = api.get(f"{API}/webhooks/{hook['id']}/deliveries").json()["items"]
    assert [(d["event"], d["status"]) for d in log] == [("observation.created", "stopped")]
    assert log[0]["attempts"][0]["error"] == "the webhook is inactive"


def test_a_receiver_that_never_answers_is_retried_later(api: Client, store: MemoryStore) -> None:
    hook = _create(api, {"url": "http://127.0.0.1:9/hook", "events": EVENTS}).json()
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("agent-1", "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    assert deliver_due(store)["retrying"] == 1
    (entry,) = api.get(f"{API}/webhooks/{hook['id']}/deliveries").json()["items"]
    assert entry["status"] == "pending" and entry["attempts"][0]["status_code"] is None
    assert entry["next_attempt_at"] > entry["attempts"][0]["at"]


def test_delete_removes_the_hook_and_its_log(api: Client) -> None:
    hook = _create(api, {"url": "http://127.0.0.1:9/hook", "events": EVENTS}).json()
    assert api.delete(f"{API}/webhooks/{hook['id']}").status_code == 204
    assert_error(api.delete(f"{API}/webhooks/{hook['id']}"), 404, "not_found")
    assert_error(api.get(f"{API}/webhooks/{hook['id']}/deliveries"), 404, "not_found")


def test_create_change_and_delete_are_audited_without_the_secret_or_the_path(
    api: Client, settings
) -> None:
    hook = _create(api, {"url": "http://127.0.0.1:9/hook?token=abc", "events": EVENTS}).json()
    assert _patch(api, hook["id"], {"active": False}).status_code == 200
    assert api.delete(f"{API}/webhooks/{hook['id']}").status_code == 204
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = False  # a refused create leaves no entry
    assert _create(api, {"url": "http://127.0.0.1:9/x", "events": EVENTS}).status_code == 422
    entries = api.get(f"{API}/audit", {"object_id": hook["id"]}).json()["items"]
    assert [(e["action"], e["actor"], e["agent_id"]) for e in entries] == [
        ("webhook.delete", "api:test-key", "agent-1"),
        ("webhook.update", "api:test-key", "agent-1"),
        ("webhook.create", "api:test-key", "agent-1"),
    ]
    assert entries[2]["summary"] == {"host": "127.0.0.1", "events": EVENTS}
    assert entries[1]["summary"] == {"active": {"before": True, "after": False}}
    assert hook["secret"] not in str(entries) and "token" not in str(entries)
    everything = api.get(f"{API}/audit", {"action": "webhook.create"}).json()["items"]
    assert len(everything) == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
    ],
)
def test_private_and_loopback_urls_are_refused_unless_allowed(
    api: Client, settings, url: str
) -> None:
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = False
    error = assert_error(_create(api, {"url": url, "events": EVENTS}), 422, "validation_error")
    assert "private" in error["message"]
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    assert _create(api, {"url": url, "events": EVENTS}).status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        {"url": "ftp://example.com/hook", "events": EVENTS},
        {"url": "javascript:alert(1)", "events": EVENTS},
        {"url": "http:///nohost", "events": EVENTS},
        {"url": "http://127.0.0.1:99999/hook", "events": EVENTS},
        {"url": "http://127.0.0.1:port/hook", "events": EVENTS},
        {"url": "http://127.0.0.1/a b", "events": EVENTS},
        {"url": "http://[::1/hook", "events": EVENTS},
        {"url": "http://127.0.0.1/hook", "events": []},
        {"url": "http://127.0.0.1/hook", "events": ["observation.exploded"]},
        {"url": "http://127.0.0.1/hook", "events": EVENTS, "secret": "mine"},
        {"url": "http://127.0.0.1/" + "x" * 3000, "events": EVENTS},
        {"events": EVENTS},
    ],
)
def test_bad_bodies_are_a_422(api: Client, body: dict) -> None:
    assert_error(_create(api, body), 422, "validation_error")


def test_other_agents_hooks_are_not_found(api: Client, limited_api: Client) -> None:
    theirs = _create(api, {"url": "http://127.0.0.1:9/h", "events": EVENTS}, agent="agent-2")
    hook_id = theirs.json()["id"]
    assert_error(
        _create(limited_api, {"url": "http://127.0.0.1:9/h", "events": EVENTS}, "agent-2"),
        404,
        "not_found",
    )
    assert_error(_patch(limited_api, hook_id, {"active": False}), 404, "not_found")
    assert_error(limited_api.delete(f"{API}/webhooks/{hook_id}"), 404, "not_found")
    assert_error(limited_api.get(f"{API}/webhooks/{hook_id}/deliveries"), 404, "not_found")
    assert_error(api.delete(f"{API}/webhooks/not-an-id"), 404, "not_found")
    assert_error(_patch(api, hook_id, {"active": "maybe"}), 422, "validation_error")
    assert_error(_patch(api, hook_id, {"colour": "red"}), 422, "validation_error")
