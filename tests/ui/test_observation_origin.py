"""Answers and pages say how an observation got there (issue 40): `origin` and `added_by`
on ObservationOut; an add through the API is no longer labelled "added by hand"."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from memory_admin.models import ApiKey
from tests.api.conftest import API, bearer_client
from tests.factories import ScopeFactory

pytestmark = pytest.mark.django_db


def test_api_and_ui_adds_carry_their_origin_and_who_added_them(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    api = bearer_client(ApiKey.generate(name="bot-key", agent_ids=[])[1])
    single = api.post(
        f"{API}/scopes/{scope.id}/observations",
        json.dumps({"content": "Ada drinks oat milk."}),
        content_type="application/json",
    ).json()
    assert (single["origin"], single["added_by"]) == ("api", "api:bot-key")
    keyed = api.post(
        f"{API}/scopes/{scope.id}/observations",
        json.dumps({"content": "Ada cycles to work.", "client_id": "k1"}),
        content_type="application/json",
    ).json()
    assert keyed["origin"] == "api"
    [batch] = api.post(
        f"{API}/scopes/{scope.id}/observations",
        json.dumps({"items": [{"client_id": "b1", "content": "Ada reads at night."}]}),
        content_type="application/json",
    ).json()["items"]
    assert (batch["origin"], batch["added_by"]) == ("api", "api:bot-key")

    client = client_as("operator")
    client.post(
        reverse("ui:observation_add", args=[scope.id]), {"content": "Ada likes quiet rooms."}
    )
    listed = api.get(f"{API}/scopes/{scope.id}/observations", {"limit": 10}).json()["items"]
    by_text = {o["content"]: o for o in listed}
    hand = by_text["Ada likes quiet rooms."]
    assert hand["origin"] == "operator" and hand["added_by"].startswith("ui:")

    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert page.count('data-origin="api"') == 3
    assert "added through the API by api:bot-key" in page
    assert page.count("added by hand by ui:") == 1


def test_observations_stored_before_the_field_existed_get_an_inferred_origin(store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    api = bearer_client(ApiKey.generate(name="k", agent_ids=[])[1])
    made = api.post(
        f"{API}/scopes/{scope.id}/observations",
        json.dumps({"content": "Ada drinks tea."}),
        content_type="application/json",
    ).json()
    store.db["memory_observations"].update_one(
        {"_id": __import__("bson").ObjectId(made["id"])},
        {"$unset": {"origin": "", "added_by": ""}, "$set": {"source_session_id": "s1"}},
    )
    again = api.get(f"{API}/observations/{made['id']}").json()
    assert (again["origin"], again["added_by"]) == ("extraction", None)
