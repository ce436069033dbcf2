"""Review decisions can be undone for a while (issue 40): `POST
/observations/{id}/review/undo` puts the item back in review with what the approval did
taken back (pending list, search), audited; after `MEMORY_REVIEW_UNDO_SECONDS` a 409 in
the envelope; `GET /agents/{id}/review/decided` lists decided items, newest first."""

from __future__ import annotations

import json

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory

JSON = "application/json"


@pytest.fixture
def group(store):
    return ScopeFactory.create(store=store, group=True, agent_id="agent-1")


@pytest.fixture
def waiting(store, group):
    return [
        observation_add(store=store, scope=group, content=f"Ops line is +1 415 555 267{i}.")
        for i in range(3)
    ]


def post(client, path, body=None):
    return client.post(f"{API}{path}", json.dumps(body or {}), content_type=JSON)


def search_ids(api, group, query):
    found = api.get(f"{API}/agents/agent-1/search", {"q": query, "group_id": group.group_id})
    assert found.status_code == 200, found.content
    return [h["observation"]["id"] for h in found.json()["items"]]


def test_undoing_an_approval_takes_it_out_of_memory_and_back_to_review(api, group, waiting):
    one = waiting[0]
    assert post(api, f"/observations/{one.id}/review", {"decision": "approve"}).status_code == 200
    assert api.get(f"{API}/scopes/{group.id}").json()["pending_count"] == 1
    undone = post(api, f"/observations/{one.id}/review/undo")
    assert undone.status_code == 200, undone.content
    body = undone.json()
    assert body["status"] == "in_review"
    assert body["review"]["reasons"] == ["flag:pii:phone"] and body["review"]["decision"] is None
    assert api.get(f"{API}/scopes/{group.id}").json()["pending_count"] == 0
    queue = api.get(f"{API}/agents/agent-1/review").json()["items"]
    assert one.id in [o["id"] for o in queue]
    audit = api.get(f"{API}/audit?object_id={one.id}").json()["items"]
    assert [e["action"] for e in audit] == ["observation.review_undo", "observation.review_approve"]
    # it can be decided again, and undone again
    assert post(api, f"/observations/{one.id}/review", {"decision": "reject"}).status_code == 200
    assert post(api, f"/observations/{one.id}/review/undo").json()["status"] == "in_review"


def test_an_undone_approval_is_in_no_search(api, store, group):
    held = observation_add(store=store, scope=group, content="Mail zebrafish ops@example.com.")
    post(api, f"/observations/{held.id}/review", {"decision": "approve"})
    assert search_ids(api, group, "zebrafish") == [held.id]
    post(api, f"/observations/{held.id}/review/undo")
    assert search_ids(api, group, "zebrafish") == []


def test_undoing_a_rejection_and_a_candidate_goes_back_to_where_it_was(api, waiting):
    post(api, f"/observations/{waiting[1].id}/review", {"decision": "reject", "note": "no"})
    body = post(api, f"/observations/{waiting[1].id}/review/undo").json()
    assert body["status"] == "in_review" and body["review"]["note"] is None


def test_after_the_window_the_undo_is_409_and_changes_nothing(api, settings, waiting):
    post(api, f"/observations/{waiting[0].id}/review", {"decision": "approve"})
    settings.MEMORY_REVIEW_UNDO_SECONDS = 0
    assert_error(post(api, f"/observations/{waiting[0].id}/review/undo"), 409, "undo_expired")
    assert api.get(f"{API}/observations/{waiting[0].id}").json()["status"] == "pending"
    decided = api.get(f"{API}/agents/agent-1/review/decided").json()["items"]
    assert [(d["observation"]["id"], d["undo_until"]) for d in decided] == [(waiting[0].id, None)]


def test_what_cannot_be_undone_is_409_with_the_reason(api, waiting):
    assert_error(post(api, f"/observations/{waiting[0].id}/review/undo"), 409, "undo_unavailable")
    edited = post(
        api,
        f"/observations/{waiting[1].id}/review",
        {"decision": "approve", "content": "Ops has an on-call line."},
    )
    assert edited.status_code == 200
    refused = post(api, f"/observations/{waiting[1].id}/review/undo")
    assert_error(refused, 409, "undo_unavailable")
    assert "edited" in refused.json()["error"]["message"]
    post(api, f"/observations/{waiting[2].id}/review", {"decision": "reject"})
    assert post(api, f"/observations/{waiting[2].id}/review/undo").status_code == 200
    assert_error(post(api, f"/observations/{waiting[2].id}/review/undo"), 409, "undo_unavailable")
    assert_error(post(api, f"/observations/{ObjectId()}/review/undo"), 404, "not_found")


def test_the_undo_needs_the_review_permission(limited_api, api, waiting):
    post(api, f"/observations/{waiting[0].id}/review", {"decision": "approve"})
    denied = post(limited_api, f"/observations/{waiting[0].id}/review/undo")
    assert_error(denied, 403, "permission_denied")


def test_decided_items_are_listed_newest_first_paginated(api, limited_api, waiting):
    for o in waiting:
        post(api, f"/observations/{o.id}/review", {"decision": "reject"})
    first = api.get(f"{API}/agents/agent-1/review/decided?limit=2").json()
    assert [d["observation"]["id"] for d in first["items"]] == [waiting[2].id, waiting[1].id]
    assert all(d["undo_until"] for d in first["items"])
    rest = api.get(f"{API}/agents/agent-1/review/decided", {"cursor": first["next_cursor"]})
    assert [d["observation"]["id"] for d in rest.json()["items"]] == [waiting[0].id]
    assert rest.json()["next_cursor"] is None
    post(api, f"/observations/{waiting[1].id}/review/undo")
    listed = api.get(f"{API}/agents/agent-1/review/decided").json()["items"]
    assert [d["observation"]["id"] for d in listed] == [waiting[2].id, waiting[0].id]
    assert_error(limited_api.get(f"{API}/agents/agent-2/review/decided"), 404, "not_found")
    assert_error(
        api.get(f"{API}/agents/agent-1/review/decided?cursor=eyJ4IjoxfQ"), 422, "validation_error"
    )
