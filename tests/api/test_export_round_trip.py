"""The export carries a scope's settings, pins, prompt overrides and (for a user's own scope)
the user's groups, and the import restores them: a round trip into a fresh database gives
identical state, per scope type (issue 37, part 4). Older documents still import."""

from __future__ import annotations

import copy
import json

import pytest
from bson import ObjectId

from streams.core.documents import Scope
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.prompts.defaults import DEFAULT_TEMPLATES
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error
from tests.api.test_export_import import _fresh_database, post_import

AGENT = "a1"
JSON = "application/json"
GROUPS = [{"id": "g-1", "name": "Group One"}, {"id": "g-2"}]


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _patch(api, scope_id: str, body: dict) -> dict:
    response = api.patch(f"{API}/scopes/{scope_id}", body, content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def _world(api, store: MemoryStore) -> dict[str, str]:
    """Four scopes, each with settings other than the defaults, pins and prompt overrides;
    alice's own scope knows her groups."""
    keys = {
        "alice": ScopeKey.individual(AGENT, "alice"),
        "group": ScopeKey.group(AGENT, "g-1"),
        "collective": ScopeKey.collective(AGENT),
        "shard": ScopeKey.collective(AGENT, "billing"),
    }
    ids = {}
    for n, (name, key) in enumerate(keys.items()):
        scope, _ = scope_get_or_create(store=store, key=key, display_name=f"The {name}")
        for i in range(2):
            observation_add(store=store, scope=scope, content=f"{name} fact {i} about Lisbon")
        settings = {
            "consolidation_threshold": 7 + n,
            "consolidation_max_words": 300 + n,
            "review_mode": ["all", "propagated", "all", "propagated"][n],
            "max_observations": 50 + n,
            "consolidation_prompt": DEFAULT_TEMPLATES["consolidation"] + f"\nKeep it short ({n}).",
        }
        if name == "alice":
            settings["extraction_prompt"] = DEFAULT_TEMPLATES["extraction"] + "\nBe terse."
        else:
            settings["extraction_prompt"] = f"Only what concerns {name}."
        if name != "collective" and name != "shard":
            settings["propagation_prompt"] = DEFAULT_TEMPLATES["propagation"] + "\nCopy less."
        settings |= {"item_words": 12 + n, "item_cap": 3, "consolidation_model": "gpt-4.1"}
        if name not in ("collective", "shard"):
            settings["propagation_model"] = "gpt-4.1-mini"
        _patch(api, scope.id, settings)
        switches = {"recency": n % 2 == 0, "mmr": True}
        ranking = api.patch(f"{API}/scopes/{scope.id}/ranking", switches, content_type=JSON)
        assert ranking.status_code == 200, ranking.content
        pins = api.put(
            f"{API}/scopes/{scope.id}/pins",
            {"pins": [f"The {name} always meets in Lisbon."]},
            content_type="application/json",
        )
        assert pins.status_code == 200, pins.content
        ids[name] = scope.id
    store.scopes.remember_groups(ObjectId(ids["alice"]), GROUPS)
    _patch(api, ids["shard"], {"is_active": False})  # paused is a setting too
    return ids


SETTINGS = (
    "is_active", "consolidation_threshold", "consolidation_max_words", "review_mode",
    "max_observations", "pins", "extraction_prompt", "consolidation_prompt",
    "propagation_prompt", "groups", "display_name", "item_words", "item_cap",
    "consolidation_model", "propagation_model", "ranking",
)  # fmt: skip


def _settings(store: MemoryStore, scope_id: str) -> dict:
    scope: Scope = store.scopes.get(ObjectId(scope_id))
    return {name: getattr(scope, name) for name in SETTINGS}


def _without_time(document: dict) -> dict:
    return {k: v for k, v in document.items() if k != "exported_at"}


@pytest.mark.parametrize("name", ["alice", "group", "collective", "shard"])
def test_a_scope_export_round_trips_settings_pins_and_prompts(
    api, store, settings, embedded_mongo, name
):
    ids = _world(api, store)
    scope_id = ids[name]
    before = _settings(store, scope_id)
    document = api.get(f"{API}/scopes/{scope_id}/export").json()
    [block] = document["scopes"]
    assert block["settings"]["pins"] == [f"The {name} always meets in Lisbon."]
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        response = post_import(api, document)
        assert response.status_code == 200, response.content
        assert response.json()["settings_applied"] == 1
        assert _settings(fresh, scope_id) == before
        again = api.get(f"{API}/scopes/{scope_id}/export").json()
        assert _without_time(again) == _without_time(document)  # identical state
        # The restored overrides are the prompts in effect, with a history behind them.
        assert (
            fresh.prompts.latest(
                agent_id=AGENT, scope_id=ObjectId(scope_id), kind="consolidation"
            ).text
            == before["consolidation_prompt"]
        )
        # Importing it again changes nothing.
        repeat = post_import(api, document).json()
        assert repeat["settings_applied"] == 0 and repeat["observations_imported"] == 0
        assert _without_time(api.get(f"{API}/scopes/{scope_id}/export").json()) == _without_time(
            document
        )
    finally:
        fresh.client.drop_database(fresh.db.name)


def test_a_user_export_restores_their_groups_and_own_settings(api, store, settings, embedded_mongo):
    ids = _world(api, store)
    observation_add(
        store=store,
        scope=store.scopes.get(ObjectId(ids["group"])),
        content="alice said the group meets on Fridays",
        related_user_ids=["alice"],
    )
    before = _settings(store, ids["alice"])
    document = api.get(f"{API}/agents/{AGENT}/users/alice/export").json()
    own, *shared = document["scopes"]
    assert own["settings"]["groups"] == GROUPS
    assert [b["settings"] for b in shared] == [None]  # a group's settings are not hers
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        result = post_import(api, document).json()
        assert result["settings_applied"] == 1
        assert _settings(fresh, ids["alice"]) == before  # she feeds her groups again
        again = api.get(f"{API}/agents/{AGENT}/users/alice/export").json()
        assert _without_time(again) == _without_time(document)
    finally:
        fresh.client.drop_database(fresh.db.name)


def test_an_existing_scope_keeps_its_own_settings(api, store):
    ids = _world(api, store)
    document = api.get(f"{API}/scopes/{ids['group']}/export").json()
    _patch(api, ids["group"], {"consolidation_threshold": 99})
    result = post_import(api, document).json()
    assert result["settings_applied"] == 0 and result["settings_skipped"] == 1
    assert store.scopes.get(ObjectId(ids["group"])).consolidation_threshold == 99


def test_an_export_1_document_still_imports(api, store, settings, embedded_mongo):
    ids = _world(api, store)
    document = api.get(f"{API}/scopes/{ids['group']}/export").json()
    assert document["format"] == "memory-admin/export-2"
    old = copy.deepcopy(document)
    old["format"] = "memory-admin/export-1"
    del old["scopes"][0]["settings"]
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        response = post_import(api, old)
        assert response.status_code == 200, response.content
        assert response.json()["observations_imported"] == 2
        restored = fresh.scopes.get(ObjectId(ids["group"]))
        assert restored.consolidation_threshold == 10 and restored.pins == []  # defaults
    finally:
        fresh.client.drop_database(fresh.db.name)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s.update(consolidation_threshold=0), "consolidation_threshold"),
        (lambda s: s.update(review_mode="sometimes"), "review_mode"),
        (lambda s: s.update(max_observations="many"), "max_observations"),
        (lambda s: s.update(pins=["x " * 400]), "pins"),
        (lambda s: s.update(pins="one"), "pins"),
        (lambda s: s.update(groups=[{"id": ""}]), "groups"),
        (lambda s: s.update(groups=[{"id": "g", "role": "x"}]), "groups"),
        (lambda s: s.update(consolidation_prompt="{nonsense}"), "consolidation_prompt"),
        (lambda s: s.update(colour="red"), None),
        (lambda s: s.update(item_words=0), "item_words"),
        (lambda s: s.update(item_cap="five"), "item_cap"),
        (lambda s: s.update(consolidation_model="no-such-model"), "consolidation_model"),
        (lambda s: s.update(ranking={"speed": True}), "ranking"),
        (lambda s: s.update(ranking={"recency": "yes"}), "ranking"),
        (lambda s: s.update(ranking=[True]), "ranking"),
        (lambda s: s.update(digest="0" * 64), "digest"),
    ],
)
def test_bad_settings_are_422_naming_the_field_and_store_nothing(
    api, store, settings, embedded_mongo, change, field
):
    ids = _world(api, store)
    document = api.get(f"{API}/scopes/{ids['group']}/export").json()
    block_settings = document["scopes"][0]["settings"]
    change(block_settings)
    if field != "digest":
        block_settings.pop("digest", None)
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        error = assert_error(post_import(api, document), 422, "validation_error")
        assert error["details"][0]["item"] == "scopes[0].settings"
        if field is not None:
            assert error["details"][0].get("field") == field, error["details"]
        assert fresh.scopes.get(ObjectId(ids["group"])) is None
    finally:
        fresh.client.drop_database(fresh.db.name)


def test_the_import_answer_is_documented(api):
    schema = api.get(f"{API}/openapi.json").json()
    out = schema["components"]["schemas"]["ImportOut"]["properties"]
    assert {"settings_applied", "settings_skipped"} <= set(out)
    assert json.dumps(out)  # plain JSON


def test_the_markdown_export_shows_the_settings_pins_and_groups(api, store):
    ids = _world(api, store)
    text = api.get(f"{API}/agents/{AGENT}/users/alice/export?format=markdown").content.decode()
    assert "### Settings" in text
    assert "- threshold 7, word limit 300, review mode all, retention cap 50" in text
    assert "- pinned: The alice always meets in Lisbon." in text
    assert "- groups: Group One (`g-1`), `g-2`" in text
    assert "- prompt overrides: extraction, consolidation, propagation" in text
    shard = api.get(f"{API}/scopes/{ids['shard']}/export?format=markdown").content.decode()
    assert "paused" in shard
