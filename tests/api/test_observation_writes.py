"""Observation writes: corrections, marking private, and soft deletion (204, idempotent)."""

from __future__ import annotations

import pytest

from streams.core.ids import require_object_id
from streams.records.recount import recount
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory
from tests.task_mode import settle

JSON = "application/json"


@pytest.fixture
def scope(store):
    return ScopeFactory.create(store=store, user_id="u1")


@pytest.fixture
def observation(store, scope):
    return ObservationFactory.create(store=store, scope=scope, content="Gene prefers Go.")


def patch(client, observation_id: str, body: object):
    return client.patch(
        f"{API}/observations/{observation_id}", body, content_type="application/json"
    )


def listed(client, scope_id: str, query: str = "") -> list[str]:
    body = client.get(f"{API}/scopes/{scope_id}/observations?{query}").json()
    return [o["id"] for o in body["items"]]


def test_patch_content_and_private(api, observation):
    response = patch(api, observation.id, {"content": "  Gene prefers Rust.  ", "private": True})
    assert response.status_code == 200
    updated = response.json()
    assert (updated["content"], updated["private"]) == ("Gene prefers Rust.", True)
    assert updated["status"] == "pending"
    assert api.get(f"{API}/observations/{observation.id}").json() == updated


def test_patch_one_field_keeps_the_other(api, observation):
    assert patch(api, observation.id, {"private": True}).json()["content"] == "Gene prefers Go."
    updated = patch(api, observation.id, {"content": "Gene prefers Rust."}).json()
    assert updated["private"] is True
    assert patch(api, observation.id, {}).json() == updated


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": ""}, "content"),
        ({"content": "x" * 4001}, "content"),
        ({"content": None}, "content"),
        ({"private": "yes"}, "private"),
        ({"private": None}, "private"),
        ({"deleted": True}, "deleted"),
    ],
)
def test_invalid_patch_is_422(api, observation, body, field):
    error = assert_error(patch(api, observation.id, body), 422, "validation_error")
    assert [d["field"] for d in error["details"]] == [field]
    assert api.get(f"{API}/observations/{observation.id}").json()["content"] == "Gene prefers Go."


def test_delete_is_soft_and_idempotent(api, scope, observation):
    response = api.delete(f"{API}/observations/{observation.id}")
    assert response.status_code == 204
    assert response.content == b""
    body = api.get(f"{API}/observations/{observation.id}").json()
    # Removed text is on no surface (issue 37): the record stays, its words do not.
    assert body["deleted"] is True and body["content"] is None
    assert listed(api, scope.id) == []
    assert listed(api, scope.id, "include_deleted=true") == [observation.id]
    assert api.delete(f"{API}/observations/{observation.id}").status_code == 204


def test_a_deleted_observation_cannot_be_changed(api, observation):
    api.delete(f"{API}/observations/{observation.id}")
    assert_error(patch(api, observation.id, {"content": "new"}), 409, "conflict")


@pytest.mark.parametrize("observation_id", ["nope", "0" * 24, "g" * 24])
def test_unknown_or_malformed_ids_are_404(api, observation_id):
    assert_error(patch(api, observation_id, {"private": True}), 404, "not_found")
    assert_error(api.delete(f"{API}/observations/{observation_id}"), 404, "not_found")


def test_other_agents_observations_are_404_for_a_limited_key(limited_api, store):
    other = ObservationFactory.create(
        store=store, scope=ScopeFactory.create(store=store, agent_id="agent-2")
    )
    assert_error(patch(limited_api, other.id, {"private": True}), 404, "not_found")
    assert_error(limited_api.delete(f"{API}/observations/{other.id}"), 404, "not_found")
    stored = store.observations.get(require_object_id(other.id, what="observation"))
    assert stored is not None and (stored.deleted_at, stored.private) == (None, False)


def test_a_deleted_observation_leaves_every_count(api, store, django_capture_on_commit_callbacks):
    """README: deleted observations leave every count (the scope's, the agent's, pending),
    once however often they are deleted, and forgetting the user later takes no more."""
    scope = ScopeFactory.create(store=store, agent_id="counts", user_id="u-counts")
    ids = [
        api.post(
            f"{API}/scopes/{scope.id}/observations", {"content": text}, content_type=JSON
        ).json()["id"]
        for text in ("Gene prefers Go.", "Gene lives in Oslo.", "Gene has a cat.")
    ]

    def counts() -> tuple[int, int, int, int]:
        agent = store.agents.get("counts")
        body = api.get(f"{API}/scopes/{scope.id}").json()
        return (
            body["observation_count"],
            body["pending_count"],
            agent.observation_count,
            agent.pending_count,
        )

    assert counts() == (3, 3, 3, 3)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"{API}/observations/{ids[0]}").status_code == 204
        assert api.delete(f"{API}/observations/{ids[0]}").status_code == 204  # twice: once
    settle(store)
    assert counts() == (2, 2, 2, 2)
    assert recount(store=store, min_messages=4).agents_changed == 0  # the counters agree

    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"{API}/agents/counts/users/u-counts").status_code == 202
    settle(store)
    assert store.agents.get("counts").observation_count == 0
    assert recount(store=store, min_messages=4).agents_changed == 0
