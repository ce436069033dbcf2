"""`POST /observations/{id}/feedback`: counts on the observation, once per context call,
permission `read`, and 404 for deleted or foreign observations."""

from __future__ import annotations

import pytest

from memory_admin.models import ApiKey
from tests.api.conftest import API, assert_error, bearer_client
from tests.factories import ScopeFactory


def add(client, scope_id: str, content: str) -> dict:
    response = client.post(
        f"{API}/scopes/{scope_id}/observations",
        {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def feedback(client, observation_id: str, body: object):
    return client.post(
        f"{API}/observations/{observation_id}/feedback", body, content_type="application/json"
    )


def context_call(client, agent_id: str = "agent-1") -> str:
    answer = client.post(
        f"{API}/agents/{agent_id}/context",
        {"user_id": "u1", "message": "what does Ada drink?"},
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["context_call_id"]


def test_feedback_with_an_unknown_context_call_is_a_404_and_counts_nothing(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    created = add(api, scope.id, "Ada drinks oat milk")
    unknown = feedback(
        api, created["id"], {"useful": True, "context_call_id": "65f0c0ffee0123456789abcd"}
    )
    assert_error(unknown, 404, "not_found")
    assert "context call" in unknown.json()["error"]["message"]
    theirs = context_call(api, "agent-2")  # another agent's call is unknown to this one
    assert_error(
        feedback(api, created["id"], {"useful": True, "context_call_id": theirs}), 404, "not_found"
    )
    fresh = api.get(f"{API}/observations/{created['id']}").json()
    assert (fresh["useful_count"], fresh["useless_count"]) == (0, 0)
    mine = feedback(api, created["id"], {"useful": True, "context_call_id": context_call(api)})
    assert mine.status_code == 200 and mine.json()["useful_count"] == 1


def test_feedback_counts_on_the_observation_once_per_context_call(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    created = add(api, scope.id, "Ada drinks oat milk")
    first = feedback(api, created["id"], {"useful": True})
    assert first.status_code == 200, first.content
    assert (first.json()["useful_count"], first.json()["useless_count"]) == (1, 0)
    call = context_call(api)
    feedback(api, created["id"], {"useful": False, "context_call_id": call})
    again = feedback(api, created["id"], {"useful": False, "context_call_id": call}).json()
    assert (again["useful_count"], again["useless_count"]) == (1, 1)  # the repeat counted once
    listed = api.get(f"{API}/scopes/{scope.id}/observations").json()["items"][0]
    assert (listed["useful_count"], listed["useless_count"]) == (1, 1)
    audit = api.get(f"{API}/audit", {"action": "observation.feedback"}).json()["items"]
    assert len(audit) == 2


def test_feedback_needs_only_read_and_a_key_without_it_is_refused(api, store, db):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    created = add(api, scope.id, "Ada drinks oat milk")
    _, read_only = ApiKey.generate(name="reader", agent_ids=["agent-1"], permissions=["read"])
    assert feedback(bearer_client(read_only), created["id"], {"useful": True}).status_code == 200
    _, writer = ApiKey.generate(name="writer", agent_ids=["agent-1"], permissions=["write"])
    assert_error(
        feedback(bearer_client(writer), created["id"], {"useful": True}), 403, "permission_denied"
    )
    assert_error(
        feedback(bearer_client("nope"), created["id"], {"useful": True}), 401, "unauthorized"
    )


def test_feedback_on_a_deleted_or_foreign_observation_is_a_404(api, limited_api, store):
    mine = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    theirs = ScopeFactory.create(store=store, agent_id="agent-2", user_id="u1")
    gone = add(api, mine.id, "Ada drinks oat milk")
    assert api.delete(f"{API}/observations/{gone['id']}").status_code == 204
    assert_error(feedback(api, gone["id"], {"useful": True}), 404, "not_found")
    foreign = add(api, theirs.id, "Bo drinks tea")
    assert_error(feedback(limited_api, foreign["id"], {"useful": True}), 404, "not_found")
    assert_error(feedback(api, "65f0c0ffee0123456789abcd", {"useful": True}), 404, "not_found")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"useful": "yes"},
        {"useful": 1},
        {"useful": True, "context_call_id": "not-an-id"},
        {"useful": True, "context_call_id": 5},
        {"useful": True, "stars": 5},
        {"useful": True, "context_call_id": "a" * 10_000},
        [],
    ],
)
def test_bad_feedback_bodies_are_4xx_in_the_envelope(api, store, body):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    created = add(api, scope.id, "Ada drinks oat milk")
    response = feedback(api, created["id"], body)
    assert 400 <= response.status_code < 500
    assert set(response.json()) == {"error"}
    assert api.get(f"{API}/observations/{created['id']}").json()["useful_count"] == 0


def test_a_malformed_observation_id_is_a_4xx(api):
    response = feedback(api, "xyz", {"useful": True})
    assert response.status_code in (404, 422) and set(response.json()) == {"error"}
