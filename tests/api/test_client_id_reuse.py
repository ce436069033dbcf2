"""A `client_id` is an idempotency key, as payment APIs treat theirs (issue 37, part 6).

A repeat with the same key and the same content answers the first observation (200). The
same key with other content is the caller's mistake, not a retry: `409 client_id_reused`
naming the first observation, and nothing is stored. "The same content" is the caller's
text as sent, with surrounding whitespace stripped and runs of whitespace made one space;
it is compared before screening, so a redacted secret still matches its own retry.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from bson import ObjectId

from streams.memory.observation_batch import ClientIdReused, observation_add_once
from streams.records.audit import audit_page
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory

SECRET = "sk-proj-4fG7hJ2kL9mN3pQ8rS5tV1wX6yZ0aB"


@pytest.fixture
def scope(store):
    return ScopeFactory.create(store=store, user_id="u1")


def post(client, scope_id: str, body: object):
    return client.post(
        f"{API}/scopes/{scope_id}/observations", body, content_type="application/json"
    )


def listed(client, scope_id: str) -> list[dict]:
    return client.get(f"{API}/scopes/{scope_id}/observations?limit=100").json()["items"]


def test_a_single_add_reusing_a_client_id_with_other_content_is_409(api, store, scope):
    first = post(api, scope.id, {"content": "Gene likes green tea.", "client_id": "k-1"})
    assert first.status_code == 201, first.content
    error = assert_error(
        post(api, scope.id, {"content": "Gene likes black tea.", "client_id": "k-1"}),
        409,
        "client_id_reused",
    )
    assert error["details"] == {"observation_id": first.json()["id"], "client_id": "k-1"}
    assert [o["id"] for o in listed(api, scope.id)] == [first.json()["id"]]
    assert len(audit_page(store=store, action="observation.create", limit=50).items) == 1


def test_the_same_content_with_other_spacing_is_a_retry(api, scope):
    first = post(api, scope.id, {"content": "Gene likes  green tea.", "client_id": "k"})
    again = post(api, scope.id, {"content": "  Gene likes green\ntea. ", "client_id": "k"})
    assert again.status_code == 200, again.content
    assert again.json()["id"] == first.json()["id"]
    # Case is content: a retry sends the same bytes, a different case is a different text.
    assert_error(
        post(api, scope.id, {"content": "gene likes green tea.", "client_id": "k"}),
        409,
        "client_id_reused",
    )


def test_a_redacted_secret_still_matches_its_own_retry(api, scope):
    body = {"content": f"Gene's API key is {SECRET} for staging.", "client_id": "s"}
    first = post(api, scope.id, body)
    assert first.status_code == 201, first.content
    assert SECRET not in first.json()["content"]  # stored redacted
    again = post(api, scope.id, body)
    assert again.status_code == 200, again.content
    assert again.json()["id"] == first.json()["id"]


def test_a_key_that_named_a_duplicate_compares_with_what_its_caller_sent(api, scope):
    kept = post(api, scope.id, {"content": "Gene likes tea.", "client_id": "a"}).json()
    dup = post(api, scope.id, {"content": "Gene likes tea!", "client_id": "b"})
    assert dup.status_code == 200 and dup.json()["id"] == kept["id"]
    assert (
        post(api, scope.id, {"content": "Gene likes tea!", "client_id": "b"}).json()["id"]
        == kept["id"]
    )
    error = assert_error(
        post(api, scope.id, {"content": "Gene likes tea.", "client_id": "b"}),
        409,
        "client_id_reused",
    )
    assert error["details"]["observation_id"] == kept["id"]


def test_a_batch_item_reusing_a_client_id_is_409_per_item_and_stores_nothing(api, store, scope):
    single = post(api, scope.id, {"content": "Gene likes tea.", "client_id": "one"}).json()
    batch = post(api, scope.id, {"items": [{"client_id": "b0", "content": "Gene has a cat."}]})
    b0 = batch.json()["items"][0]["id"]
    body = {
        "items": [
            {"client_id": "new", "content": "Gene plays chess."},
            {"client_id": "one", "content": "Gene likes coffee."},
            {"client_id": "b0", "content": "Gene has a dog."},
        ]
    }
    error = assert_error(post(api, scope.id, body), 409, "client_id_reused")
    assert error["details"] == {
        "observation_id": single["id"],
        "client_id": "one",
        "items": [
            {"item": 1, "client_id": "one", "observation_id": single["id"]},
            {"item": 2, "client_id": "b0", "observation_id": b0},
        ],
    }
    assert {o["id"] for o in listed(api, scope.id)} == {single["id"], b0}  # nothing new


def test_a_batch_re_sent_as_it_was_still_answers_200(api, scope):
    body = {"items": [{"client_id": f"c{i}", "content": f"Fact number {i}."} for i in range(3)]}
    first = post(api, scope.id, body)
    assert first.status_code == 201
    again = post(api, scope.id, body)
    assert again.status_code == 200, again.content
    assert [i["id"] for i in again.json()["items"]] == [i["id"] for i in first.json()["items"]]


def test_concurrent_first_sends_with_other_content_store_one_and_refuse_the_rest(store, scope):
    """Six first sends of one key with six texts at once: the key's unique `_id` lets one
    commit; each other one retries, finds the key with other content and is refused."""
    start = Barrier(6)

    def add(n: int) -> tuple[str, str]:
        start.wait()
        try:
            observation, _ = observation_add_once(
                store=store,
                scope=store.scopes.get(ObjectId(scope.id)),
                content=f"Gene likes tea number {n}.",
                client_id="same",
                actor="t",
            )
        except ClientIdReused as exc:
            return "refused", exc.details["observation_id"]
        return "stored", observation.id

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(add, range(6)))
    stored = [i for outcome, i in results if outcome == "stored"]
    assert len(stored) == 1
    assert sorted(results) == sorted([("stored", stored[0])] + [("refused", stored[0])] * 5)
    assert store.scopes.get(ObjectId(scope.id)).observation_seq == 1
