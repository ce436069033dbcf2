"""The review endpoints (api.md, third wave): queue, one decision, bulk decisions, and the
scope's review_mode; flags and review on observations written through the API."""

from __future__ import annotations

import json

import pytest
from bson import ObjectId
from django.test import Client

from memory_admin.models import ApiKey
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.api.conftest import API, assert_error, bearer_client
from tests.factories import ScopeFactory

JSON = "application/json"
PHONE = "Call the Eden on-call line on +1 415 555 2671."


@pytest.fixture
def group(store):
    return ScopeFactory.create(store=store, group=True, agent_id="agent-1")


@pytest.fixture
def waiting(store, group):
    return [
        observation_add(store=store, scope=group, content=f"Ops line is +1 415 555 267{i}.")
        for i in range(3)
    ]


def post(client, path, body):
    return client.post(f"{API}{path}", json.dumps(body), content_type=JSON)


def test_api_writes_into_a_shared_scope_carry_flags_and_wait(api, group):
    single = post(api, f"/scopes/{group.id}/observations", {"content": PHONE})
    assert single.status_code == 201
    body = single.json()
    assert body["status"] == "in_review" and body["flags"] == ["pii:phone"]
    assert body["review"]["reasons"] == ["flag:pii:phone"]
    batch = post(
        api,
        f"/scopes/{group.id}/observations",
        {
            "items": [
                {"client_id": "c1", "content": "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
            ]
        },
    )
    [item] = batch.json()["items"]
    assert item["status"] == "in_review" and item["flags"] == ["secret"]
    assert "ghp_" not in item["content"] and "[redacted secret]" in item["content"]
    scope = api.get(f"{API}/scopes/{group.id}").json()
    assert scope["pending_count"] == 0 and scope["review_mode"] == "off"
    listed = api.get(f"{API}/scopes/{group.id}/observations?status=in_review").json()
    assert len(listed["items"]) == 2
    assert api.get(f"{API}/scopes/{group.id}/observations?status=pending").json()["items"] == []


def test_the_queue_is_oldest_first_paginated_and_filtered(api, store, group, waiting):
    mail = observation_add(store=store, scope=group, content="Mail ops@example.com.")
    first = api.get(f"{API}/agents/agent-1/review?limit=2").json()
    assert [o["id"] for o in first["items"]] == [waiting[0].id, waiting[1].id]
    rest = api.get(f"{API}/agents/agent-1/review?cursor={first['next_cursor']}").json()
    assert [o["id"] for o in rest["items"]] == [waiting[2].id, mail.id]
    by_reason = api.get(f"{API}/agents/agent-1/review?reason=flag:pii:email").json()
    assert [o["id"] for o in by_reason["items"]] == [mail.id]
    by_scope = api.get(f"{API}/agents/agent-1/review?scope_id={group.id}").json()
    assert len(by_scope["items"]) == 4
    assert api.get(f"{API}/agents/agent-1/review?status=candidate").json()["items"] == []


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("status=pending", 422),
        ("limit=0", 422),
        ("cursor=!!", 422),
        ("cursor=eyJ4IjoxfQ", 422),
        ("reason=whatever", 422),
        ("scope_id=nothex", 404),
        # an id no scope has; named, so every xdist worker collects the same test
        pytest.param(f"scope_id={ObjectId()}", 404, id="scope_id=unknown-404"),
    ],
)
def test_bad_queue_queries_are_4xx_in_the_envelope(api, waiting, query, status):
    response = api.get(f"{API}/agents/agent-1/review?{query}")
    assert response.status_code == status
    assert set(response.json()) == {"error"}


@pytest.fixture
def reviewer_api(db) -> Client:
    """An agent-bound key given `review` by name (agent-bound keys lack it by default)."""
    _, raw = ApiKey.generate(
        name="agent-1-reviewer", agent_ids=["agent-1"], permissions=["read", "write", "review"]
    )
    return bearer_client(raw)


def test_an_agent_bound_key_without_review_may_list_but_not_decide(limited_api, waiting):
    assert len(limited_api.get(f"{API}/agents/agent-1/review").json()["items"]) == 3
    decided = post(limited_api, f"/observations/{waiting[0].id}/review", {"decision": "approve"})
    assert_error(decided, 403, "permission_denied")
    bulk = post(
        limited_api,
        "/agents/agent-1/review/decisions",
        {"ids": [waiting[0].id], "decision": "reject"},
    )
    assert_error(bulk, 403, "permission_denied")


def test_an_agent_bound_key_sees_only_its_agents_queue(reviewer_api, store, waiting):
    limited_api = reviewer_api
    other, _ = scope_get_or_create(store=store, key=ScopeKey.group("agent-2", "g9"))
    theirs = observation_add(store=store, scope=other, content=PHONE)
    assert len(limited_api.get(f"{API}/agents/agent-1/review").json()["items"]) == 3
    assert_error(limited_api.get(f"{API}/agents/agent-2/review"), 404, "not_found")
    decided = post(limited_api, f"/observations/{theirs.id}/review", {"decision": "approve"})
    assert_error(decided, 404, "not_found")
    bulk = post(
        limited_api, "/agents/agent-2/review/decisions", {"ids": [theirs.id], "decision": "reject"}
    )
    assert_error(bulk, 404, "not_found")
    mine = post(
        limited_api, "/agents/agent-1/review/decisions", {"ids": [theirs.id], "decision": "reject"}
    )
    assert mine.json() == {"approved": 0, "rejected": 0, "skipped": [theirs.id]}


def test_approve_reject_and_the_conflict_when_not_waiting(api, store, group, waiting):
    approved = post(api, f"/observations/{waiting[0].id}/review", {"decision": "approve"})
    assert approved.status_code == 200, approved.content
    assert approved.json()["status"] == "pending"
    assert approved.json()["review"]["decision"] == "approve"
    assert api.get(f"{API}/scopes/{group.id}").json()["pending_count"] == 1
    again = post(api, f"/observations/{waiting[0].id}/review", {"decision": "reject"})
    assert_error(again, 409, "not_in_review")

    rejected = post(
        api, f"/observations/{waiting[1].id}/review", {"decision": "reject", "note": "a phone"}
    )
    assert rejected.json()["status"] == "rejected"
    assert rejected.json()["review"]["note"] == "a phone"
    audit = api.get(f"{API}/audit?object_id={waiting[1].id}").json()["items"]
    assert [e["action"] for e in audit] == ["observation.review_reject"]
    assert audit[0]["actor"] == "api:test-key"

    edited = post(
        api,
        f"/observations/{waiting[2].id}/review",
        {"decision": "approve", "content": "Ops has an on-call line."},
    )
    assert edited.json()["content"] == "Ops has an on-call line." and edited.json()["flags"] == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"decision": "approve", "content": " ".join(["word"] * 51)}, 422),
        ({"decision": "maybe"}, 422),
        ({"decision": "approve", "extra": 1}, 422),
        ({"decision": "reject", "content": "x"}, 422),
        ({"decision": "reject", "note": "x" * 2001}, 422),
        ({}, 422),
    ],
)
def test_bad_decisions_are_4xx_and_change_nothing(api, waiting, body, status):
    response = post(api, f"/observations/{waiting[0].id}/review", body)
    assert response.status_code == status, response.content
    assert set(response.json()) == {"error"}
    assert api.get(f"{API}/observations/{waiting[0].id}").json()["status"] == "in_review"


def test_decisions_on_unknown_or_malformed_ids_are_404(api):
    assert_error(
        post(api, f"/observations/{ObjectId()}/review", {"decision": "approve"}), 404, "not_found"
    )
    assert_error(post(api, "/observations/zzz/review", {"decision": "approve"}), 404, "not_found")


def test_bulk_decisions_apply_and_list_what_they_skipped(api, waiting):
    post(api, f"/observations/{waiting[0].id}/review", {"decision": "reject"})
    unknown = str(ObjectId())
    response = post(
        api,
        "/agents/agent-1/review/decisions",
        {"ids": [o.id for o in waiting] + [unknown], "decision": "approve", "note": "ok"},
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["approved"], body["rejected"]) == (2, 0)
    assert sorted(body["skipped"]) == sorted([waiting[0].id, unknown])


@pytest.mark.parametrize(
    "body",
    [
        {"ids": [], "decision": "approve"},
        {"ids": ["a"] * 501, "decision": "approve"},
        {"ids": ["a"], "decision": "later"},
        {"ids": ["a"], "decision": "approve", "content": "x"},
        {"ids": "a", "decision": "approve"},
    ],
)
def test_bad_bulk_bodies_are_422(api, body):
    assert_error(post(api, "/agents/agent-1/review/decisions", body), 422, "validation_error")


def test_review_mode_is_a_scope_setting(api, group):
    response = api.patch(
        f"{API}/scopes/{group.id}", json.dumps({"review_mode": "propagated"}), content_type=JSON
    )
    assert response.status_code == 200 and response.json()["review_mode"] == "propagated"
    bad = api.patch(f"{API}/scopes/{group.id}", json.dumps({"review_mode": "x"}), content_type=JSON)
    assert_error(bad, 422, "validation_error")
    entries = api.get(f"{API}/audit?object_id={group.id}&action=scope.update").json()["items"]
    assert entries and "review_mode" in json.dumps(entries[0]["summary"])


def test_review_mode_all_holds_what_an_api_key_adds(api, group):
    api.patch(f"{API}/scopes/{group.id}", json.dumps({"review_mode": "all"}), content_type=JSON)
    body = post(api, f"/scopes/{group.id}/observations", {"content": "Standups at nine."}).json()
    assert body["status"] == "in_review" and body["review"]["reasons"] == ["api"]
