"""Bearer keys: 401 in the envelope for no, bad or revoked keys; agent limits answer 404."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory_admin.models import ApiKey
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory


def test_valid_key_is_accepted_and_records_last_use(api, api_key):
    assert api.get(f"{API}/agents/agent-1/scopes").status_code == 200
    key = ApiKey.objects.get(pk=api_key[0].pk)
    assert key.last_used_at is not None


def test_last_use_is_written_at_most_once_a_minute(api, api_key, django_assert_num_queries):
    api.get(f"{API}/agents/agent-1/scopes")
    with django_assert_num_queries(1):  # the key lookup only, no UPDATE
        api.get(f"{API}/agents/agent-1/scopes")
    a_while_ago = timezone.now() - timedelta(minutes=5)
    ApiKey.objects.filter(pk=api_key[0].pk).update(last_used_at=a_while_ago)
    api.get(f"{API}/agents/agent-1/scopes")
    assert ApiKey.objects.get(pk=api_key[0].pk).last_used_at > a_while_ago


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer mk_not-a-real-key"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer " + "x" * 5000},
    ],
    ids=["missing", "unknown", "empty", "basic", "huge"],
)
def test_missing_or_invalid_key_is_401_envelope(db, headers):
    response = Client(headers=headers).get(f"{API}/agents/agent-1/scopes")
    assert_error(response, 401, "unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"


def test_revoked_key_is_401(api, api_key):
    assert api.get(f"{API}/agents/agent-1/scopes").status_code == 200
    ApiKey.objects.filter(pk=api_key[0].pk).update(revoked_at=timezone.now())
    assert_error(api.get(f"{API}/agents/agent-1/scopes"), 401, "unauthorized")


def test_api_never_redirects_to_login(db):
    response = Client().post(f"{API}/agents/agent-1/scopes", {}, content_type="application/json")
    assert response.status_code == 401  # not a 302 to the UI's login page


def test_limited_key_sees_its_agent(limited_api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1")
    assert limited_api.get(f"{API}/scopes/{scope.id}").status_code == 200
    items = limited_api.get(f"{API}/agents/agent-1/scopes").json()["items"]
    assert [s["id"] for s in items] == [scope.id]


def test_limited_key_gets_404_for_another_agents_objects(limited_api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-2")
    observation_id = ObservationFactory.create(store=store, scope=scope).id
    for path in (
        f"/scopes/{scope.id}",
        f"/scopes/{scope.id}/observations",
        f"/observations/{observation_id}",
        "/agents/agent-2/scopes",
    ):
        assert_error(limited_api.get(API + path), 404, "not_found")
    response = limited_api.post(
        f"{API}/agents/agent-2/scopes",
        {"scope_type": "group", "group_id": "g1"},
        content_type="application/json",
    )
    assert_error(response, 404, "not_found")
    response = limited_api.post(
        f"{API}/scopes/{scope.id}/observations", {"content": "x"}, content_type="application/json"
    )
    assert_error(response, 404, "not_found")


def test_not_yours_looks_exactly_like_not_there(limited_api, store):
    other = ScopeFactory.create(store=store, agent_id="agent-2")
    hidden = limited_api.get(f"{API}/scopes/{other.id}").json()
    missing = limited_api.get(f"{API}/scopes/{'0' * 24}").json()
    assert hidden == missing
