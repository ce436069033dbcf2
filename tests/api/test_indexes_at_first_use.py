"""Indexes are never optional: the app creates missing ones at first use, or refuses to serve."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from streams.store import DECLARED_INDEXES
from streams.store.client import get_client
from tests.api.conftest import API, assert_error

MESSAGES = {"user_id": "u1", "messages": [{"id": "m-1", "role": "user", "content": "I like tea."}]}


@pytest.fixture
def bare_db(embedded_mongo, settings):
    """A database nobody ran `ensure_indexes` on."""
    name = f"bare_{uuid.uuid4().hex[:12]}"
    settings.MONGODB_DB = name
    client = get_client(embedded_mongo.uri)
    yield client[name]
    client.drop_database(name)


def ingest(api):
    return api.post(
        f"{API}/agents/a1/sessions/s1/messages", data=MESSAGES, content_type="application/json"
    )


def test_the_first_request_creates_the_indexes_so_ingest_stays_idempotent(api, bare_db):
    first = ingest(api)
    assert first.status_code == 202, first.content
    declared = {spec.model().document["name"] for spec in DECLARED_INDEXES}
    present = {
        name
        for collection in bare_db.list_collection_names()
        for name in bare_db[collection].index_information()
    }
    assert declared <= present
    again = ingest(api)
    assert again.status_code == 202 and again.json()["duplicates"] == 1, again.content


def test_indexes_that_cannot_be_created_refuse_service_and_health_says_why(api, bare_db):
    spec = DECLARED_INDEXES[0]
    name = spec.model().document["name"]
    # Someone made an index of the same name on other keys: creating ours fails.
    bare_db[spec.collection].create_index([("something_else", 1)], name=name)
    health = Client().get(f"{API}/health")
    error = assert_error(health, 503, "indexes_missing")
    assert error["details"]["store"] == "indexes_missing"
    assert_error(ingest(api), 503, "indexes_missing")


def test_ensure_indexes_drops_the_retired_ones_and_creates_their_replacements(store, bare_db):
    from streams.store import RETIRED_INDEXES, MemoryStore

    # What an earlier version left: the old index on each retired one's keys.
    old_keys = {
        "agent_id_1_related_user_ids_1": [("agent_id", 1), ("related_user_ids", 1)],
        "propagated_from_1": [("propagated_from", 1)],
        "embedding_stale_1": [("embedding_stale", 1)],
        "o_1": [("o", 1)],
        "pending_age": [("pending_observation_ids", 1), ("_id", 1)],
    }
    for retired in RETIRED_INDEXES:
        bare_db[retired.collection].create_index(old_keys[retired.name], name=retired.name)

    MemoryStore(store.client, bare_db.name).ensure_indexes()

    for retired in RETIRED_INDEXES:
        present = bare_db[retired.collection].index_information()
        assert retired.name not in present
    observations = bare_db["memory_observations"].index_information()
    assert observations["propagated_from_sparse"].get("sparse") is True
    assert observations["embedding_stale_sparse"].get("sparse") is True
    assert bare_db["memory_search_terms"].index_information()["o_sparse"].get("sparse") is True
    assert "pending_since" in bare_db["memory_scopes"].index_information()
