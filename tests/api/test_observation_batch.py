"""Batch adds: `{"items": [...]}` on the observations endpoint, one transaction,
idempotent by `client_id`, with the single-item form unchanged beside it."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.core.exceptions import Unavailable
from streams.records.audit import audit_page
from streams.search.index import search_in_scopes
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory


@pytest.fixture
def scope(store):
    return ScopeFactory.create(store=store, user_id="u1")


def post(client, scope_id: str, body: object):
    return client.post(
        f"{API}/scopes/{scope_id}/observations", body, content_type="application/json"
    )


def items(n: int, prefix: str = "c", start: int = 0) -> list[dict]:
    return [
        {"client_id": f"{prefix}{i}", "content": f"Fact {i}: Gene likes tea number{i}."}
        for i in range(start, start + n)
    ]


def listed(client, scope_id: str) -> list[dict]:
    return client.get(f"{API}/scopes/{scope_id}/observations?limit=100").json()["items"]


def test_a_batch_is_stored_in_order_pending_and_searchable(api, store, scope):
    body = {"items": items(3)}
    body["items"][1].update(private=True, observed_at="2024-05-01T10:00:00+02:00")
    response = post(api, scope.id, body)
    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer["created"] == 3
    assert [i["client_id"] for i in answer["items"]] == ["c0", "c1", "c2"]
    assert all(i["created"] and i["status"] == "pending" for i in answer["items"])
    assert answer["items"][1]["private"] is True
    assert answer["items"][1]["observed_at"].startswith("2024-05-01T08:00:00")
    assert answer["items"][0]["related_user_ids"] == ["u1"]
    stored = listed(api, scope.id)
    assert [o["id"] for o in stored] == [i["id"] for i in reversed(answer["items"])]
    fresh = api.get(f"{API}/scopes/{scope.id}").json()
    assert fresh["pending_count"] == 3
    hits = search_in_scopes(
        store=store, scopes=[store.scopes.get(ObjectId(scope.id))], query="number1"
    )
    assert [h.observation.id for h in hits] == [answer["items"][1]["id"]]


def test_a_re_send_answers_the_same_ids_and_stores_nothing(api, store, scope):
    first = post(api, scope.id, {"items": items(4)}).json()
    again = post(api, scope.id, {"items": items(4)})
    assert again.status_code == 200
    assert again.json()["created"] == 0
    assert [i["id"] for i in again.json()["items"]] == [i["id"] for i in first["items"]]
    assert not any(i["created"] for i in again.json()["items"])
    # Half known, half new: only the new ones are stored, in one go.
    mixed = post(api, scope.id, {"items": items(4, start=2)})
    assert mixed.status_code == 201
    assert [i["created"] for i in mixed.json()["items"]] == [False, False, True, True]
    assert mixed.json()["items"][0]["id"] == first["items"][2]["id"]
    assert len(listed(api, scope.id)) == 6
    assert api.get(f"{API}/scopes/{scope.id}").json()["pending_count"] == 6


def test_client_ids_are_per_scope(api, store, scope):
    other = ScopeFactory.create(store=store, user_id="u2")
    a = post(api, scope.id, {"items": items(1)}).json()["items"][0]
    b = post(api, other.id, {"items": items(1)}).json()["items"][0]
    assert a["id"] != b["id"] and b["created"] is True


def test_501_items_are_422(api, scope):
    error = assert_error(post(api, scope.id, {"items": items(501)}), 422, "validation_error")
    assert error["details"][0]["field"] == "items"
    assert listed(api, scope.id) == []


def test_500_items_are_accepted(api, scope):
    response = post(api, scope.id, {"items": items(500)})
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 500


def test_a_client_id_twice_in_one_batch_is_422_and_stores_nothing(api, scope):
    body = {"items": [*items(3), {"client_id": "c1", "content": "again"}]}
    error = assert_error(post(api, scope.id, body), 422, "validation_error")
    assert error["details"][0]["field"] == "items.3.client_id"
    assert listed(api, scope.id) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"items": [{"client_id": "a", "content": "x", "colour": "red"}]}, "items.0.colour"),
        ({"items": [{"content": "x"}]}, "items.0.client_id"),
        ({"items": [{"client_id": "", "content": "x"}]}, "items.0.client_id"),
        ({"items": [{"client_id": "a", "content": "x" * 4001}]}, "items.0.content"),
        ({"items": [{"client_id": "a", "content": "x", "private": "yes"}]}, "items.0.private"),
        ({"items": []}, "items"),
        ({"items": "nope"}, "items"),
        ({"items": items(1), "content": "both"}, "content"),
    ],
)
def test_bad_batches_are_422_naming_the_field(api, scope, body, field):
    error = assert_error(post(api, scope.id, body), 422, "validation_error")
    assert field in [d["field"] for d in error["details"]]
    assert listed(api, scope.id) == []


def test_blank_content_in_a_batch_is_422(api, scope):
    body = {"items": [*items(2), {"client_id": "z", "content": "   "}]}
    error = assert_error(post(api, scope.id, body), 422, "validation_error")
    assert error["details"][0]["field"] == "items.2.content"
    assert listed(api, scope.id) == []


def test_the_single_item_form_is_unchanged(api, scope):
    response = post(api, scope.id, {"content": "Prefers Rust"})
    assert response.status_code == 201
    assert response.json()["content"] == "Prefers Rust"
    assert "client_id" not in response.json()
    error = assert_error(
        post(api, scope.id, {"content": "x", "colour": 1}), 422, "validation_error"
    )
    assert [d["field"] for d in error["details"]] == ["colour"]


def test_a_failure_half_way_stores_nothing(api, store, scope, monkeypatch):
    """The client ids are the last write of the transaction: when it fails, the
    observations, their postings and the scope's counters are rolled back."""
    post(api, scope.id, {"items": items(2)})
    before = api.get(f"{API}/scopes/{scope.id}").json()

    def broken(*args, **kwargs):
        raise Unavailable("the store went away")

    monkeypatch.setattr(type(store.client_ids), "insert", broken)
    response = post(api, scope.id, {"items": items(3, start=5)})
    assert response.status_code == 503
    monkeypatch.undo()
    assert len(listed(api, scope.id)) == 2
    after = api.get(f"{API}/scopes/{scope.id}").json()
    assert (after["pending_count"], after["observation_count"]) == (
        before["pending_count"],
        before["observation_count"],
    )
    live = store.scopes.get(ObjectId(scope.id))
    assert search_in_scopes(store=store, scopes=[live], query="number6") == []
    # The same batch sent again (the failure healed) is stored whole.
    assert post(api, scope.id, {"items": items(3, start=5)}).json()["created"] == 3


def test_one_audit_entry_per_batch(api, store, scope):
    post(api, scope.id, {"items": items(3)})
    post(api, scope.id, {"items": items(3)})  # a re-send changes nothing: no entry
    entries = audit_page(store=store, action="observation.create_batch", limit=50).items
    assert len(entries) == 1
    assert entries[0].object_id == scope.id
    assert entries[0].summary["created"] == 3
    assert "Gene" not in str(entries[0].summary)


def test_a_batch_reaching_the_threshold_queues_a_consolidation(api, scope, monkeypatch):
    assert (
        api.patch(
            f"{API}/scopes/{scope.id}",
            {"consolidation_threshold": 3},
            content_type="application/json",
        ).status_code
        == 200
    )
    queued: list = []
    monkeypatch.setattr("streams.actions.base._dispatcher", queued.extend)
    post(api, scope.id, {"items": items(2)})
    assert queued == []
    post(api, scope.id, {"items": items(2, start=2)})
    assert [(j.kind, j.scope_id, j.trigger) for j in queued] == [
        ("consolidation", scope.id, "threshold")
    ]


def test_the_openapi_documents_both_forms(api):
    schema = api.get(f"{API}/openapi.json").json()
    operation = schema["paths"][f"{API}/scopes/{{scope_id}}/observations"]["post"]
    assert "client_id" in operation["description"]
    text = str(operation["requestBody"])
    assert "ObservationBatchIn" in text and "ObservationIn" in text
