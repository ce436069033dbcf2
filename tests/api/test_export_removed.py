"""An export lists a removed observation (deleted or expired) without its words, on each
scope type, and the import skips it: the one visibility rule holds for exports too."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from streams.core.documents import utcnow
from streams.guard.screening import screened
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.api.conftest import API

AGENT = "a1"
KEYS = {
    "individual": ScopeKey.individual(AGENT, "alice"),
    "group": ScopeKey.group(AGENT, "g-1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "billing"),
}


@pytest.mark.parametrize("scope_type", sorted(KEYS))
def test_an_expired_observation_is_exported_without_its_text_and_not_imported(
    api, store, scope_type
):
    scope, _ = scope_get_or_create(store=store, key=KEYS[scope_type], display_name="S")
    kept = observation_add(store=store, scope=scope, content="Alice keeps a pottery wheel.")
    gone = observation_add(store=store, scope=scope, content="Alice waits for a flowerpot.")
    store.observations.update_fields(
        ObjectId(gone.id),
        {"expires_at": utcnow() - timedelta(minutes=1), "content": screened(gone.content)},
        scope_id=ObjectId(scope.id),
    )
    response = api.get(f"{API}/scopes/{scope.id}/export")
    assert response.status_code == 200
    assert "flowerpot" not in response.content.decode()
    items = {o["id"]: o for o in response.json()["scopes"][0]["observations"]}
    assert items[gone.id]["content"] is None and items[kept.id]["content"] is not None

    store.observations.collection.delete_many({"scope_id": ObjectId(scope.id)})
    again = api.post(
        f"{API}/agents/{AGENT}/import", response.json(), content_type="application/json"
    )
    assert again.status_code == 200, again.content
    assert again.json()["deleted_skipped"] == 1
    assert store.observations.get(ObjectId(gone.id)) is None
