"""Observations: a scope's log with status filters and pages, manual additions, one observation."""

from __future__ import annotations

import pytest

from streams.core.documents import utcnow
from streams.core.ids import require_object_id
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory

OBSERVATION_FIELDS = {
    "id", "scope_id", "content", "observed_at", "created_at", "source_session_id",
    "source_message_ids", "related_user_ids", "status", "private", "propagated_from",
    "access_count", "last_accessed_at", "deleted", "similar_to", "flags", "review",
    "expires_at", "expired", "useful_count", "useless_count", "contradicts", "origin", "added_by",
    "superseded_by", "valid_until", "superseded", "scope_type", "scope_name",
}  # fmt: skip
BY_ID_NULL = {"scope_type": None, "scope_name": None}  # one observation by id: no scope read


def add(client, scope_id: str, body: object):
    return client.post(
        f"{API}/scopes/{scope_id}/observations", body, content_type="application/json"
    )


def test_add_observation_201_goes_to_pending(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1")
    body = {
        "content": "  Prefers Rust  ",
        "private": True,
        "observed_at": "2024-05-01T10:00:00+02:00",
    }
    response = add(api, scope.id, body)
    assert response.status_code == 201
    created = response.json()
    assert set(created) == OBSERVATION_FIELDS
    assert created["content"] == "Prefers Rust"
    assert (created["status"], created["private"], created["deleted"]) == ("pending", True, False)
    assert created["observed_at"].startswith("2024-05-01T08:00:00")
    assert created["related_user_ids"] == ["u1"]
    assert (created["scope_type"], created["scope_name"]) == ("individual", scope.display_name)
    assert api.get(f"{API}/observations/{created['id']}").json() == {**created, **BY_ID_NULL}
    assert api.get(f"{API}/scopes/{scope.id}").json()["pending_count"] == 1


def test_add_observation_defaults(api, store):
    scope = ScopeFactory.create(store=store)
    created = add(api, scope.id, {"content": "x"}).json()
    assert created["private"] is False and created["observed_at"].endswith(("Z", "+00:00"))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "sticky": True}, "sticky"),
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "x" * 4001}, "content"),
        ({"content": "x", "private": "yes"}, "private"),
        ({"content": "x", "observed_at": "2024-05-01T10:00:00"}, "observed_at"),
        ({"content": "x", "observed_at": "yesterday"}, "observed_at"),
        ({"content": 5}, "content"),
    ],
    ids=["unknown", "missing", "empty", "too-long", "private-str", "naive", "not-a-time", "int"],
)
def test_invalid_observation_is_422_naming_the_field(api, store, body, field):
    scope = ScopeFactory.create(store=store)
    error = assert_error(add(api, scope.id, body), 422, "validation_error")
    assert [d["field"] for d in error["details"]] == [field]


def test_blank_content_is_refused(api, store):
    # The schema says so (pattern \S), so a schema-based client learns it before sending.
    scope = ScopeFactory.create(store=store)
    error = assert_error(add(api, scope.id, {"content": "   "}), 422, "validation_error")
    assert [d["field"] for d in error["details"]] == ["content"]


def test_list_observations_status_filter_and_deleted(api, store):
    scope = ScopeFactory.create(store=store)
    kept, consolidated, deleted = ObservationFactory.create_batch(3, store=store, scope=scope)
    store.observations.mark_consolidated([require_object_id(consolidated.id, what="observation")])
    store.observations.update_fields(
        require_object_id(deleted.id, what="observation"),
        {"deleted_at": utcnow()},
        scope_id=require_object_id(scope.id, what="scope"),
    )

    def ids(query: str = "") -> list[str]:
        response = api.get(f"{API}/scopes/{scope.id}/observations?{query}")
        assert response.status_code == 200, response.content
        return [o["id"] for o in response.json()["items"]]

    assert ids() == [consolidated.id, kept.id]
    assert ids("status=pending") == [kept.id]
    assert ids("status=consolidated") == [consolidated.id]
    assert ids("include_deleted=true") == [deleted.id, consolidated.id, kept.id]
    listed = api.get(f"{API}/scopes/{scope.id}/observations?include_deleted=true").json()
    assert listed["items"][0]["deleted"] is True
    assert listed["items"][1]["status"] == "consolidated"
    error = assert_error(
        api.get(f"{API}/scopes/{scope.id}/observations?status=forgotten"), 422, "validation_error"
    )
    assert error["details"][0]["field"] == "status"


def test_observation_pages_walk_the_whole_log(api, store):
    scope = ScopeFactory.create(store=store)
    created = [o.id for o in ObservationFactory.create_batch(5, store=store, scope=scope)]
    seen: list[str] = []
    url = f"{API}/scopes/{scope.id}/observations?limit=2"
    while url:
        body = api.get(url).json()
        seen += [o["id"] for o in body["items"]]
        cursor = body["next_cursor"]
        url = f"{API}/scopes/{scope.id}/observations?limit=2&cursor={cursor}" if cursor else ""
    assert seen == list(reversed(created))


def test_observation_list_limit_and_cursor_are_validated(api, store):
    scope = ScopeFactory.create(store=store)
    assert_error(
        api.get(f"{API}/scopes/{scope.id}/observations?limit=500"), 422, "validation_error"
    )
    assert_error(
        api.get(f"{API}/scopes/{scope.id}/observations?cursor=%%%"), 422, "validation_error"
    )


def test_list_and_batch_answers_carry_scope_names(api, store):
    # The scope the endpoint read already names every item: no read per observation.
    group = ScopeFactory.create(store=store, group=True, group_id="g1", display_name="Eden Team")
    shard = ScopeFactory.create(store=store, shard=True, name="billing")
    for i in range(3):
        ObservationFactory.create(store=store, scope=group, content=f"fact {i}")
    page = api.get(f"{API}/scopes/{group.id}/observations").json()
    assert {(o["scope_type"], o["scope_name"]) for o in page["items"]} == {("group", "Eden Team")}
    batch = add(api, shard.id, {"items": [{"client_id": "a", "content": "Invoices monthly"}]})
    assert [(o["scope_type"], o["scope_name"]) for o in batch.json()["items"]] == [
        ("shard", "billing")
    ]


def test_search_hits_observation_carries_scope_names(api, store):
    shard = ScopeFactory.create(store=store, shard=True, name="billing")
    ObservationFactory.create(store=store, scope=shard, content="Invoices are paid in euros")
    hits = api.get(f"{API}/agents/{shard.agent_id}/search", {"q": "invoices"}).json()["items"]
    assert [(h["observation"]["scope_type"], h["observation"]["scope_name"]) for h in hits] == [
        ("shard", "billing")
    ]
