"""Contradictions across scope types: the newer and the older flagged with each other's id;
in shared scopes the newer waits for review (`contradicts:<id>`) and is resolved there
(approve: keep both, or delete the older; reject: keep the older; edit then approve); in
individual scopes nothing waits and the log shows "newer wins"."""

from __future__ import annotations

import json

import pytest

from streams.core.contradictions import contradicts
from tests.api.conftest import API
from tests.factories import ScopeFactory

JSON = "application/json"
OLD = "The team deploys on Fridays."
NEW = "The team deploys on Mondays."
SHARED = [{"group": True}, {"collective": True}, {"shard": True}]


def post(client, path, body):
    return client.post(f"{API}{path}", json.dumps(body), content_type=JSON)


def add(client, scope_id: str, content: str) -> dict:
    response = post(client, f"/scopes/{scope_id}/observations", {"content": content})
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ("Ada lives in Lisbon.", "Ada lives in Porto.", True),
        ("Ada is 34 years old.", "Ada is 33 years old.", True),
        ("Ada's phone number is 555-1234.", "Ada's phone number is 555-9876.", True),
        ("The release is on 2026-12-01.", "The release is on 2026-11-20.", True),
        (NEW, OLD, True),
        ("Ada lives in Lisbon.", "Ada lives in Lisbon", False),  # the same value
        ("Ada likes Rust.", "Ada likes Go.", False),  # not a single-valued relation
        ("Ada lives in Lisbon.", "Bo plays the violin.", False),  # another subject
        ("Crane 3 lifts 9 tonnes", "Crane 4 lifts 12 tonnes", False),  # two values: two facts
    ],
)
def test_the_deterministic_check(new: str, old: str, expected: bool) -> None:
    assert contradicts(new, old) is expected


@pytest.mark.parametrize("traits", SHARED, ids=["group", "collective", "shard"])
def test_in_a_shared_scope_the_newer_waits_and_both_are_flagged(api, store, traits):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **traits)
    old = add(api, scope.id, OLD)
    new = add(api, scope.id, NEW)
    assert new["status"] == "in_review"
    assert new["review"]["reasons"] == [f"contradicts:{old['id']}"]
    assert new["contradicts"] == [old["id"]]
    old_now = api.get(f"{API}/observations/{old['id']}").json()
    assert old_now["contradicts"] == [new["id"]] and old_now["status"] == "pending"
    queue = api.get(f"{API}/agents/agent-1/review", {"scope_id": scope.id}).json()["items"]
    assert [o["id"] for o in queue] == [new["id"]]
    # Only the newer waits, and it is in no search until a person decides.
    hits = api.get(f"{API}/agents/agent-1/search", {"q": "team deploys", "scope_id": scope.id})
    assert [h["observation"]["id"] for h in hits.json()["items"]] == [old["id"]]


def test_resolved_through_review_pick_the_newer(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    old = add(api, scope.id, OLD)
    new = add(api, scope.id, NEW)
    approved = post(api, f"/observations/{new['id']}/review", {"decision": "approve"})
    assert approved.status_code == 200, approved.content
    assert approved.json()["status"] == "pending"
    assert api.delete(f"{API}/observations/{old['id']}").status_code == 204
    hits = api.get(f"{API}/agents/agent-1/search", {"q": "team deploys", "scope_id": scope.id})
    assert [h["observation"]["content"] for h in hits.json()["items"]] == [NEW]


def test_resolved_through_review_keep_the_older_or_edit(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    add(api, scope.id, OLD)
    new = add(api, scope.id, NEW)
    rejected = post(
        api, f"/observations/{new['id']}/review", {"decision": "reject", "note": "still Fridays"}
    )
    assert rejected.json()["status"] == "rejected"
    edited = add(api, scope.id, "The team deploys on Tuesdays.")
    assert edited["status"] == "in_review"
    fixed = post(
        api,
        f"/observations/{edited['id']}/review",
        {"decision": "approve", "content": "The team deploys on Fridays and Tuesdays."},
    ).json()
    assert (fixed["status"], fixed["content"]) == (
        "pending",
        "The team deploys on Fridays and Tuesdays.",
    )


def test_in_an_individual_scope_nothing_waits_and_the_newer_wins(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    old = add(api, scope.id, "Ada lives in Porto.")
    new = add(api, scope.id, "Ada lives in Lisbon.")
    assert new["status"] == "pending" and new["review"] is None
    assert new["contradicts"] == [old["id"]]
    assert api.get(f"{API}/observations/{old['id']}").json()["contradicts"] == [new["id"]]
