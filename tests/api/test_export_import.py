"""Export a user and a scope (JSON, Markdown) and import them back: round trip into a fresh
database across scope types, idempotent, every bad item listed and nothing stored."""

from __future__ import annotations

import copy
import json

import pytest
from bson import ObjectId

from streams.memory.consolidation import consolidation_commit, consolidation_edit
from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error

AGENT = "a1"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _world(store: MemoryStore) -> dict[str, str]:
    """Alice's own scope, a group, the collective and a shard; several speakers; histories
    of two versions; a private one and a deleted one."""
    keys = {
        "alice": ScopeKey.individual(AGENT, "alice"),
        "group": ScopeKey.group(AGENT, "g-1"),
        "collective": ScopeKey.collective(AGENT),
        "shard": ScopeKey.collective(AGENT, "billing"),
    }
    ids = {}
    for name, key in keys.items():
        scope, _ = scope_get_or_create(store=store, key=key, display_name=f"The {name}")
        people = ["alice"] if name == "alice" else ["alice", "bob"]
        added = [
            observation_add(
                store=store, scope=scope, content=f"{name} fact {i} about Lisbon",
                source_session_id="s-1", source_message_ids=[str(ObjectId())],
                related_user_ids=people, private=(i == 2),
            )
            for i in range(4)
        ]  # fmt: skip
        consolidation_commit(
            store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
            text=f"{name}: facts 0 and 1.", absorbed_ids=[added[0].id, added[1].id],
            trigger="threshold", actor=None,
        )  # fmt: skip
        consolidation_edit(
            store=store, scope=scope_get(store=store, scope_id=scope.id),
            text=f"{name}: facts 0 and 1, edited.", expected_version=1, actor="ui:olivia",
        )  # fmt: skip
        observation_delete(store=store, observation=added[3])
        ids[name] = scope.id
    return ids


def _state(api, scope_id: str) -> dict:
    scope = api.get(f"{API}/scopes/{scope_id}").json()
    items = api.get(f"{API}/scopes/{scope_id}/observations?limit=100&include_deleted=false").json()[
        "items"
    ]
    history = api.get(f"{API}/scopes/{scope_id}/consolidations?limit=100").json()["items"]
    keep = ("id", "content", "observed_at", "created_at", "source_session_id",
            "source_message_ids", "related_user_ids", "status", "private",
            "propagated_from")  # fmt: skip
    return {
        "scope": {
            k: scope[k]
            for k in (
                "id",
                "scope_type",
                "user_id",
                "group_id",
                "name",
                "display_name",
                "consolidation",
                "consolidation_version",
                "pending_count",
            )
        },  # fmt: skip
        "observations": sorted(({k: o[k] for k in keep} for o in items), key=lambda o: o["id"]),
        "history": [
            {
                k: v[k]
                for k in (
                    "version",
                    "text",
                    "trigger",
                    "actor",
                    "created_at",
                    "absorbed_observation_ids",
                )
            }  # fmt: skip
            for v in history
        ],
    }


def _fresh_database(settings, embedded_mongo, store):
    """Point the app at a new, empty database (indexes applied)."""
    from memory_admin.stores import indexes_ensured

    name = settings.MONGODB_DB + "_fresh"
    settings.MONGODB_DB = name
    fresh = MemoryStore(store.client, name)
    fresh.ensure_indexes()
    indexes_ensured(embedded_mongo.uri, name)
    return fresh


def post_import(client, document, agent=AGENT):
    return client.post(
        f"{API}/agents/{agent}/import", json.dumps(document), content_type="application/json"
    )


def test_scope_exports_round_trip_into_a_fresh_database(api, store, settings, embedded_mongo):
    ids = _world(store)
    before = {name: _state(api, scope_id) for name, scope_id in ids.items()}
    exports = {}
    for name, scope_id in ids.items():
        response = api.get(f"{API}/scopes/{scope_id}/export")
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        exports[name] = response.json()
        [block] = exports[name]["scopes"]
        deleted = [o for o in block["observations"] if o["deleted"]]
        assert len(deleted) == 1 and deleted[0]["content"] is None  # redacted as the UI does
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        for name in ids:
            response = post_import(api, exports[name])
            assert response.status_code == 200, response.content
            assert response.json() == {
                "scopes_created": 1, "observations_imported": 3,
                "observations_already_there": 0, "deleted_skipped": 1, "versions_imported": 2,
                "observations_refused": 0, "refused": [],
                "settings_applied": 1, "settings_skipped": 0, "consolidations_left_out": [],
            }  # fmt: skip
        after = {name: _state(api, scope_id) for name, scope_id in ids.items()}
        assert after == before
        again = post_import(api, exports["group"]).json()
        assert again["observations_imported"] == 0 and again["observations_already_there"] == 3
        assert _state(api, ids["group"]) == before["group"]
    finally:
        fresh.client.drop_database(fresh.db.name)


def test_user_export_round_trip_and_markdown(api, store, settings, embedded_mongo):
    ids = _world(store)
    response = api.get(f"{API}/agents/{AGENT}/users/alice/export")
    assert response.status_code == 200
    document = response.json()
    assert [b["scope_type"] for b in document["scopes"]][0] == "individual"
    assert len(document["scopes"]) == 4
    shared = document["scopes"][1:]
    assert all(b["history"] is None and len(b["observations"]) == 4 for b in shared)

    markdown = api.get(f"{API}/agents/{AGENT}/users/alice/export?format=markdown")
    assert markdown["Content-Type"].startswith("text/markdown")
    text = markdown.content.decode()
    assert "# Memory of user `alice` (agent `a1`)" in text
    assert "alice: facts 0 and 1, edited." in text and "[deleted: text removed]" in text
    assert "- v2 · " in text and "by ui:olivia" in text
    scope_md = api.get(f"{API}/scopes/{ids['shard']}/export?format=markdown").content.decode()
    assert "## collective billing" in scope_md and "(pending, private)" in scope_md

    alice_before = _state(api, ids["alice"])
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        result = post_import(api, document).json()
        assert result["scopes_created"] == 4 and result["observations_imported"] == 3 + 3 * 3
        assert _state(api, ids["alice"]) == alice_before
        group = api.get(f"{API}/scopes/{ids['group']}/observations?limit=50").json()["items"]
        assert len(group) == 3 and all("alice" in o["related_user_ids"] for o in group)
    finally:
        fresh.client.drop_database(fresh.db.name)


def test_a_tampered_export_is_422_per_bad_item_and_stores_nothing(
    api, store, settings, embedded_mongo
):
    ids = _world(store)
    document = api.get(f"{API}/scopes/{ids['group']}/export").json()
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        tampered = copy.deepcopy(document)
        items = tampered["scopes"][0]["observations"]
        items[0]["content"] = "group fact 0 about Porto"  # changed: the digest tells
        items[1]["status"] = "forgotten"
        del items[1]["digest"]
        items[2]["observed_at"] = "yesterday"
        del items[2]["digest"]
        tampered["scopes"][0]["history"][0]["version"] = 7
        error = assert_error(post_import(api, tampered), 422, "validation_error")
        where = {(d["item"], d.get("field")) for d in error["details"]}
        assert ("scopes[0].observations[0]", "digest") in where
        assert ("scopes[0].observations[1]", "status") in where
        assert ("scopes[0].observations[2]", "observed_at") in where
        assert any(d["item"] == "scopes[0].history[0]" for d in error["details"])
        assert error["details"][0]["id"] == items[0]["id"]
        assert api.get(f"{API}/scopes/{ids['group']}").status_code == 404  # nothing stored
        assert post_import(api, document).status_code == 200  # the untouched export still is
    finally:
        fresh.client.drop_database(fresh.db.name)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(format="other/1"),
        lambda d: d.update(agent_id="a2"),
        lambda d: d.update(surprise=1),
        lambda d: d.update(scopes="all"),
        lambda d: d["scopes"][0].update(scope_type="team"),
        lambda d: d["scopes"][0].update(id="nope"),
        lambda d: d["scopes"][0].update(user_id=None),
        lambda d: d["scopes"][0]["observations"][0].update(id="zz", digest=None),
        lambda d: d["scopes"][0]["observations"][0].update(extra=True),
        lambda d: d["scopes"][0]["observations"].append("text"),
        lambda d: (
            d["scopes"][0]["observations"][0].pop("digest")
            and d["scopes"][0]["observations"][0].update(content="x" * 4001)
        ),
    ],
)
def test_bad_documents_are_422_in_the_envelope(api, store, change):
    ids = _world(store)
    document = api.get(f"{API}/scopes/{ids['alice']}/export").json()
    change(document)
    assert_error(post_import(api, document), 422, "validation_error")


def test_an_observation_of_another_scope_is_refused(api, store):
    ids = _world(store)
    document = api.get(f"{API}/scopes/{ids['alice']}/export").json()
    group_export = api.get(f"{API}/scopes/{ids['group']}/export").json()
    moved = copy.deepcopy(group_export["scopes"][0]["observations"][0])
    moved["scope_id"] = ids["alice"]
    del moved["digest"]
    document["scopes"][0]["observations"].append(moved)
    error = assert_error(post_import(api, document), 422, "validation_error")
    assert "another scope" in error["details"][0]["message"]


def test_access_and_not_found(api, limited_api, client, store):
    ids = _world(store)
    assert_error(api.get(f"{API}/scopes/{ObjectId()}/export"), 404, "not_found")
    assert_error(api.get(f"{API}/scopes/nope/export"), 404, "not_found")
    assert_error(api.get(f"{API}/scopes/{ids['alice']}/export?format=pdf"), 422,
                 "validation_error")  # fmt: skip
    assert_error(limited_api.get(f"{API}/scopes/{ids['alice']}/export"), 404, "not_found")
    assert_error(limited_api.get(f"{API}/agents/{AGENT}/users/alice/export"), 404, "not_found")
    document = api.get(f"{API}/scopes/{ids['alice']}/export").json()
    assert_error(post_import(limited_api, document), 404, "not_found")
    assert_error(client.get(f"{API}/scopes/{ids['alice']}/export"), 401, "unauthorized")
    nobody = api.get(f"{API}/agents/{AGENT}/users/nobody/export").json()
    assert nobody["scopes"] == []


def test_times_the_store_cannot_hold_are_bad_items(api, store):
    ids = _world(store)
    document = api.get(f"{API}/scopes/{ids['alice']}/export").json()
    item = document["scopes"][0]["observations"][0]
    item.pop("digest")
    item["observed_at"] = "0001-01-01T00:00:00+05:00"
    error = assert_error(post_import(api, document), 422, "validation_error")
    assert error["details"][0]["field"] == "observed_at"
