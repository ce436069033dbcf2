"""A hand add (an API key's, a person's) for a user a tombstone covers (issue 37, 3):
409 `forgotten` in the envelope and nothing stored; only lifting the tombstone lets it in.
The user's own scope can be there while the tombstone is (the forget job's window
between leaving the tombstone and removing the scope, or a scope made since)."""

from __future__ import annotations

import json

import pytest

from streams.actions import Actor
from streams.actions.privacy import do_tombstone_lift
from streams.core.documents import utcnow
from streams.guard.erasure import erasure_begin
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error

AGENT = "a1"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _forgotten_scope(store: MemoryStore) -> str:
    """The forget job's first step taken (`erasure_begin`), its scope not removed yet."""
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "gene"))
    erasure_begin(store=store, agent_id=AGENT, user_id="gene", now=utcnow(), job_id=None)
    return scope.id


def _post(api, scope_id: str, body: dict):
    return api.post(
        f"{API}/scopes/{scope_id}/observations", json.dumps(body), content_type="application/json"
    )


def _stored(store: MemoryStore, scope_id: str) -> int:
    from bson import ObjectId

    return store.db["memory_observations"].count_documents({"scope_id": ObjectId(scope_id)})


@pytest.mark.parametrize(
    "body",
    [
        {"content": "Gene moved to Porto."},
        {"content": "Gene moved to Porto.", "client_id": "k-1"},
        {"items": [{"content": "Gene moved to Porto.", "client_id": "k-2"}]},
    ],
    ids=["single", "keyed", "batch"],
)
def test_a_hand_add_for_a_forgotten_user_is_409_forgotten(api, store: MemoryStore, body):
    scope_id = _forgotten_scope(store)
    response = _post(api, scope_id, body)
    assert_error(response, 409, "forgotten")
    assert "forgotten" in response.json()["error"]["message"]
    assert _stored(store, scope_id) == 0


def test_lifting_the_tombstone_lets_the_add_in(api, store: MemoryStore):
    scope_id = _forgotten_scope(store)
    assert _post(api, scope_id, {"content": "Gene moved to Porto."}).status_code == 409
    do_tombstone_lift(
        store=store, actor=Actor.cli(), agent_id=AGENT, user_id="gene", reason="came back"
    )
    assert _post(api, scope_id, {"content": "Gene moved to Porto."}).status_code == 201
    assert _stored(store, scope_id) == 1


def test_a_hand_add_in_a_group_scope_is_not_refused(api, store: MemoryStore):
    _forgotten_scope(store)
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"))
    assert _post(api, group.id, {"content": "The team ships on Fridays."}).status_code == 201
