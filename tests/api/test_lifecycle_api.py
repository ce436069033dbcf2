"""Lifecycle over the API: `expires_at` on create, batch and patch (and what it refuses)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_admin.api.v1.schemas import iso_utc
from memory_admin.jobs.tasks import lifecycle_sweep
from streams.core.documents import utcnow
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory


def add(client, scope_id: str, body: object):
    return client.post(
        f"{API}/scopes/{scope_id}/observations", body, content_type="application/json"
    )


def patch(client, observation_id: str, body: object):
    return client.patch(
        f"{API}/observations/{observation_id}", body, content_type="application/json"
    )


def search(client, agent_id: str, user_id: str, query: str) -> list[str]:
    response = client.get(f"{API}/agents/{agent_id}/search", {"q": query, "user_id": user_id})
    assert response.status_code == 200, response.content
    return [h["observation"]["content"] for h in response.json()["items"]]


def test_expires_at_on_create_is_shown_and_a_past_one_is_refused(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1")
    later = iso_utc(utcnow() + timedelta(days=2))
    created = add(api, scope.id, {"content": "Ada is in Lisbon", "expires_at": later})
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["expires_at"], body["expired"]) == (later, False)
    assert (body["useful_count"], body["useless_count"]) == (0, 0)
    past = iso_utc(utcnow() - timedelta(minutes=1))
    refused = add(api, scope.id, {"content": "x y", "expires_at": past})
    error = assert_error(refused, 422, refused.json()["error"]["code"])
    assert "expires_at" in str(error["details"])


@pytest.mark.parametrize("value", ["tomorrow", "2030-01-01T10:00:00", 1900000000, True])
def test_a_malformed_expires_at_is_a_422(api, store, value):
    scope = ScopeFactory.create(store=store, user_id="u1")
    assert_error(add(api, scope.id, {"content": "x", "expires_at": value}), 422, "validation_error")


def test_batch_items_take_expires_at_and_a_past_one_fails_the_batch(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1")
    later = iso_utc(utcnow() + timedelta(hours=3))
    past = iso_utc(utcnow() - timedelta(hours=3))
    bad = add(
        api,
        scope.id,
        {
            "items": [
                {"client_id": "a", "content": "a b"},
                {"client_id": "b", "content": "c d", "expires_at": past},
            ]
        },
    )
    error = assert_error(bad, 422, bad.json()["error"]["code"])
    assert "items.1.expires_at" in str(error["details"])
    assert api.get(f"{API}/scopes/{scope.id}").json()["pending_count"] == 0  # all or none
    good = add(
        api, scope.id, {"items": [{"client_id": "b", "content": "c d", "expires_at": later}]}
    )
    assert good.status_code == 201 and good.json()["items"][0]["expires_at"] == later


def test_patch_sets_clears_and_expires_at_once(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1", agent_id="agent-1")
    created = add(api, scope.id, {"content": "Ada waits for the courier"}).json()
    assert created["expires_at"] is None
    assert search(api, "agent-1", "u1", "courier") == ["Ada waits for the courier"]

    past = iso_utc(utcnow() - timedelta(seconds=1))
    expired = patch(api, created["id"], {"expires_at": past})
    assert expired.status_code == 200, expired.content
    assert (expired.json()["expires_at"], expired.json()["expired"]) == (past, True)
    assert search(api, "agent-1", "u1", "courier") == []  # at once

    cleared = patch(api, created["id"], {"expires_at": None}).json()
    assert (cleared["expires_at"], cleared["expired"]) == (None, False)
    assert search(api, "agent-1", "u1", "courier") == ["Ada waits for the courier"]
    # A patch that does not name it leaves it alone.
    later = iso_utc(utcnow() + timedelta(days=1))
    patch(api, created["id"], {"expires_at": later})
    assert patch(api, created["id"], {"private": True}).json()["expires_at"] == later
    assert_error(patch(api, created["id"], {"expires_at": "soon"}), 422, "validation_error")


def scope_patch(client, scope_id: str, body: object):
    return client.patch(f"{API}/scopes/{scope_id}", body, content_type="application/json")


def test_max_observations_is_patched_shown_and_turned_off(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1")
    assert api.get(f"{API}/scopes/{scope.id}").json()["max_observations"] is None
    on = scope_patch(api, scope.id, {"max_observations": 500})
    assert on.status_code == 200, on.content
    assert (on.json()["max_observations"], on.json()["retention_purged"]) == (500, 0)
    off = scope_patch(api, scope.id, {"max_observations": None}).json()
    assert off["max_observations"] is None


@pytest.mark.parametrize("value", [9, 0, -1, 1_000_001, "100", 10.5, True, [10]])
def test_a_bad_max_observations_is_a_422(api, store, value):
    scope = ScopeFactory.create(store=store, user_id="u1")
    error = assert_error(
        scope_patch(api, scope.id, {"max_observations": value}), 422, "validation_error"
    )
    assert "max_observations" in str(error["details"])


def test_the_periodic_task_sweeps_expired_observations_and_retention(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1", agent_id="agent-1")
    created = add(api, scope.id, {"content": "Ada waits for the courier"}).json()
    patch(api, created["id"], {"expires_at": iso_utc(utcnow() - timedelta(seconds=1))})
    assert lifecycle_sweep() == {"expired": 1, "purged": 0, "rebuilds": 0, "retention_purged": 0}
    assert lifecycle_sweep() == {"expired": 0, "purged": 0, "rebuilds": 0, "retention_purged": 0}
    assert api.get(f"{API}/scopes/{scope.id}").json()["pending_count"] == 0
    # A handled expiry cannot be changed any more.
    assert_error(patch(api, created["id"], {"expires_at": None}), 409, "conflict")
