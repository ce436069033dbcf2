"""Superseded facts (issue 42) through the API, in all four scope types: in a user's own
scope a contradiction supersedes the older observation at once (newer wins); in shared
scopes a person's review decision (`supersede`) does. Superseded ones leave search,
context and the pending list, `include_superseded` shows them marked, `as_of` sees them
valid before `valid_until`, and an undo makes them current again. Bad input is a 409."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from bson import ObjectId

from streams.core.documents import utcnow
from tests.api.conftest import API
from tests.factories import ScopeFactory

JSON = "application/json"
OLD = "Dan lives in Porto."
NEW = "Dan lives in Lisbon."
SHARED = [{"group": True}, {"collective": True}, {"shard": True}]
ALL = [{"user_id": "u1"}, *SHARED]
IDS = ["user", "group", "collective", "shard"]


def post(client, path, body=None):
    return client.post(f"{API}{path}", json.dumps(body or {}), content_type=JSON)


def add(client, scope_id: str, content: str, observed_at: str | None = None) -> dict:
    body = {"content": content, **({"observed_at": observed_at} if observed_at else {})}
    response = post(client, f"/scopes/{scope_id}/observations", body)
    assert response.status_code == 201, response.content
    return response.json()


def search_ids(client, scope, **extra) -> list[str]:
    params = {"q": "where does Dan live", "scope_id": scope.id, **extra}
    if scope.scope_type == "individual":
        params["user_id"] = scope.user_id
    response = client.get(f"{API}/agents/agent-1/search", params)
    assert response.status_code == 200, response.content
    return [h["observation"]["id"] for h in response.json()["items"]]


def superseded_pair(api, store, traits) -> tuple[object, dict, dict]:
    """A scope of the type with OLD superseded by NEW (the review decides in shared ones)."""
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **traits)
    old = add(api, scope.id, OLD)
    new = add(api, scope.id, NEW)
    if scope.scope_type != "individual":
        assert new["status"] == "in_review"
        decided = post(api, f"/observations/{new['id']}/review", {"decision": "supersede"})
        assert decided.status_code == 200, decided.content
    return scope, old, new


@pytest.mark.parametrize("traits", ALL, ids=IDS)
def test_the_older_is_superseded_and_leaves_search_and_pending(api, store, traits):
    scope, old, new = superseded_pair(api, store, traits)
    got = api.get(f"{API}/observations/{old['id']}").json()
    assert got["superseded_by"] == new["id"] and got["superseded"] is True
    assert got["valid_until"] is not None and got["content"] == OLD
    assert search_ids(api, scope) == [new["id"]]
    assert set(search_ids(api, scope, include_superseded="true")) == {new["id"], old["id"]}
    fresh = store.scopes.get(ObjectId(scope.id))
    assert old["id"] not in fresh.pending_observation_ids
    assert new["id"] in fresh.pending_observation_ids
    listed = api.get(f"{API}/scopes/{scope.id}/observations").json()["items"]
    assert [o["id"] for o in listed] == [new["id"]]
    every = api.get(f"{API}/scopes/{scope.id}/observations", {"include_superseded": "true"}).json()[
        "items"
    ]
    assert {o["id"]: o["superseded"] for o in every} == {new["id"]: False, old["id"]: True}
    chain = api.get(f"{API}/observations/{new['id']}/supersession").json()["items"]
    assert [o["id"] for o in chain] == [old["id"], new["id"]]


@pytest.mark.parametrize("traits", ALL, ids=IDS)
def test_undo_makes_it_current_again_and_is_audited(api, store, traits):
    scope, old, new = superseded_pair(api, store, traits)
    undone = post(api, f"/observations/{old['id']}/unsupersede")
    assert undone.status_code == 200, undone.content
    assert undone.json()["superseded_by"] is None and undone.json()["valid_until"] is None
    assert set(search_ids(api, scope)) == {old["id"], new["id"]}
    assert old["id"] in store.scopes.get(ObjectId(scope.id)).pending_observation_ids
    again = post(api, f"/observations/{old['id']}/unsupersede")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    actions = [
        e["action"] for e in api.get(f"{API}/audit", {"object_id": old["id"]}).json()["items"]
    ]
    assert "observation.unsupersede" in actions
    if scope.scope_type != "individual":
        assert "observation.supersede" in actions


@pytest.mark.parametrize("traits", ALL, ids=IDS)
def test_superseding_a_superseded_or_deleted_one_is_a_409(api, store, traits):
    scope, old, new = superseded_pair(api, store, traits)
    third = add(api, scope.id, "Dan's favourite colour is green.")
    twice = post(api, f"/observations/{old['id']}/supersede", {"by": third["id"]})
    assert twice.status_code == 409, twice.content
    assert twice.json()["error"]["code"] == "conflict"
    # A loop: the newer superseded by the one it replaced.
    loop = post(api, f"/observations/{new['id']}/supersede", {"by": old["id"]})
    assert loop.status_code == 409
    assert api.delete(f"{API}/observations/{third['id']}").status_code == 204
    gone = post(api, f"/observations/{new['id']}/supersede", {"by": third["id"]})
    assert gone.status_code == 409
    itself = post(api, f"/observations/{new['id']}/supersede", {"by": new["id"]})
    assert itself.status_code == 422
    bad = post(api, f"/observations/{new['id']}/supersede", {"by": "nope"})
    assert bad.status_code == 422
    chain = api.get(f"{API}/observations/{old['id']}/supersession").json()["items"]
    assert [o["id"] for o in chain] == [old["id"], new["id"]]


def test_a_person_supersedes_by_hand_in_a_user_scope(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    first = add(api, scope.id, "Dan works at Acme.")
    second = add(api, scope.id, "Dan started a new job at Initech.")
    done = post(api, f"/observations/{first['id']}/supersede", {"by": second["id"]})
    assert done.status_code == 200, done.content
    assert done.json()["superseded_by"] == second["id"]


def test_a_late_older_report_does_not_replace_the_newer(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    now = utcnow()
    new = add(api, scope.id, NEW, observed_at=now.isoformat())
    old = add(api, scope.id, OLD, observed_at=(now - timedelta(days=30)).isoformat())
    assert old["contradicts"] == [new["id"]]
    assert api.get(f"{API}/observations/{new['id']}").json()["superseded_by"] is None
    assert old["superseded_by"] is None


def test_context_leaves_it_out_and_as_of_sees_it_valid_then(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    before = utcnow() - timedelta(days=20)
    store.agents.collection.update_one({"_id": "agent-1"}, {"$set": {"created_at": before}})
    store.scopes.collection.update_one(
        {"_id": ObjectId(scope.id)}, {"$set": {"created_at": before}}
    )
    old = add(api, scope.id, OLD, observed_at=(before + timedelta(days=1)).isoformat())
    new = add(api, scope.id, NEW, observed_at=(utcnow() - timedelta(days=2)).isoformat())
    assert new["contradicts"] == [old["id"]]
    store.observations.collection.update_one(
        {"_id": ObjectId(old["id"])}, {"$set": {"created_at": before + timedelta(days=1)}}
    )
    body = {"user_id": "u1", "message": "Where does Dan live?"}
    now_xml = post(api, "/agents/agent-1/context", body).json()["context"]
    assert "Lisbon" in now_xml and "Porto" not in now_xml
    then = (utcnow() - timedelta(days=10)).isoformat()
    then_xml = post(api, "/agents/agent-1/context", {**body, "as_of": then}).json()["context"]
    assert "Porto" in then_xml and "Lisbon" not in then_xml
