"""Single adds take a `client_id` (probe finding F13), as batch items do.

A client that times out cannot know whether its single add was stored; with a
`client_id` its retry is safe: the repeat answers 200 with the observation the
first request created, and stores nothing. The key space is the batch's (one
unique `_id` per scope and key), so concurrent repeats store one observation.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from bson import ObjectId

from streams.memory.observation_batch import observation_add_once
from streams.records.audit import audit_page
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory


@pytest.fixture
def scope(store):
    return ScopeFactory.create(store=store, user_id="u1")


def post(client, scope_id: str, body: object):
    return client.post(
        f"{API}/scopes/{scope_id}/observations", body, content_type="application/json"
    )


def listed(client, scope_id: str) -> list[dict]:
    return client.get(f"{API}/scopes/{scope_id}/observations?limit=100").json()["items"]


def test_a_repeat_with_the_same_client_id_answers_200_with_the_first(api, store, scope):
    first = post(api, scope.id, {"content": "Gene likes green tea.", "client_id": "k-1"})
    assert first.status_code == 201, first.content
    assert "client_id" not in first.json()  # the observation, as a plain single add answers
    again = post(api, scope.id, {"content": "Gene likes green tea.", "client_id": "k-1"})
    assert again.status_code == 200, again.content
    assert again.json() == first.json()  # the first observation (other content: 409)
    assert [o["id"] for o in listed(api, scope.id)] == [first.json()["id"]]
    assert api.get(f"{API}/scopes/{scope.id}").json()["pending_count"] == 1
    entries = audit_page(store=store, action="observation.create", limit=50).items
    assert [e.object_id for e in entries] == [first.json()["id"]]
    assert entries[0].summary["client_id"] == "k-1"
    assert store.agents.get(scope.agent_id).observation_count == 1


def test_without_a_client_id_every_new_fact_is_stored(api, scope):
    for n in range(2):
        assert post(api, scope.id, {"content": f"Gene likes tea ({n})."}).status_code == 201
    assert len(listed(api, scope.id)) == 2
    # No key, the same fact: the scope's dedup answers 200 with the one kept.
    assert post(api, scope.id, {"content": "gene likes TEA (0)"}).status_code == 200
    assert len(listed(api, scope.id)) == 2


def test_a_new_client_id_on_a_stored_fact_answers_the_kept_one(api, scope):
    first = post(api, scope.id, {"content": "Gene likes tea.", "client_id": "a"})
    assert first.status_code == 201
    again = post(api, scope.id, {"content": "Gene likes tea!", "client_id": "b"})
    assert again.status_code == 200, again.content
    assert again.json()["id"] == first.json()["id"]
    repeat = post(api, scope.id, {"content": "Gene likes tea!", "client_id": "b"})
    assert repeat.status_code == 200
    assert repeat.json()["id"] == first.json()["id"]
    assert len(listed(api, scope.id)) == 1


def test_single_adds_and_batch_items_share_the_scopes_keys(api, store, scope):
    single = post(api, scope.id, {"content": "Gene likes tea.", "client_id": "shared"}).json()
    batch = post(api, scope.id, {"items": [{"client_id": "shared", "content": "Gene likes tea."}]})
    assert batch.status_code == 200
    assert batch.json()["items"][0]["id"] == single["id"]
    assert batch.json()["items"][0]["created"] is False
    item = post(api, scope.id, {"items": [{"client_id": "b1", "content": "Gene has a cat."}]})
    repeat = post(api, scope.id, {"content": "Gene has a cat.", "client_id": "b1"})
    assert repeat.status_code == 200 and repeat.json()["id"] == item.json()["items"][0]["id"]
    # Per scope: the same key elsewhere is a new observation.
    other = ScopeFactory.create(store=store, user_id="u2")
    elsewhere = post(api, other.id, {"content": "Gene likes tea.", "client_id": "shared"})
    assert elsewhere.status_code == 201 and elsewhere.json()["id"] != single["id"]


@pytest.mark.parametrize(
    "client_id",
    ["", "x" * 129, 5, ["a"], None],
)
def test_bad_client_ids_are_422_in_the_envelope(api, scope, client_id):
    body = {"content": "Gene likes tea.", "client_id": client_id}
    if client_id is None:
        body["client_id"] = {"nested": "object"}
    error = assert_error(post(api, scope.id, body), 422, "validation_error")
    assert error["details"][0]["field"] == "client_id"
    assert listed(api, scope.id) == []


def test_concurrent_repeats_store_one_observation(store, scope):
    """Six requests with one key (and one text) at once: the key's unique `_id` lets one
    transaction commit; the others conflict, retry, find it and return it."""
    start = Barrier(6)

    def add(n: int) -> tuple[str, bool]:
        start.wait()
        observation, created = observation_add_once(
            store=store,
            scope=store.scopes.get(ObjectId(scope.id)),
            content="Gene likes tea.",
            client_id="same",
            actor="t",
        )
        return observation.id, created

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(add, range(6)))
    assert len({i for i, _ in results}) == 1
    assert sorted(created for _, created in results) == [False] * 5 + [True]
    fresh = store.scopes.get(ObjectId(scope.id))
    assert fresh.observation_seq == 1
    assert store.agents.get(scope.agent_id).observation_count == 1


def test_the_openapi_documents_the_single_client_id(api):
    schema = api.get(f"{API}/openapi.json").json()
    single = schema["components"]["schemas"]["ObservationIn"]["properties"]["client_id"]
    assert "200" in single["description"] or "repeat" in single["description"]
    text = str(single)
    assert "'maxLength': 128" in text and "'minLength': 1" in text
    operation = schema["paths"][f"{API}/scopes/{{scope_id}}/observations"]["post"]
    ok = str(operation["responses"]["200"])
    assert "ObservationOut" in ok and "ObservationBatchOut" in ok
