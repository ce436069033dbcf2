"""Scope settings (PATCH), hand edits, consolidation history, restore, and "consolidate now"."""

from __future__ import annotations

import pytest

from streams.prompts import effective_prompt, prompt_current
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory

VERSION_FIELDS = {
    "version", "text", "trigger", "actor", "absorbed_observation_ids", "prompt_version", "model",
    "prompt_tokens", "completion_tokens", "duration_ms", "restored_from", "warning",
    "redacted", "created_at", "fidelity", "coverage", "loses_answer",
}  # fmt: skip
CONSOLIDATION_TEMPLATE = (
    "Fold these into the memory of {scope}.\nMemory: {consolidation}\n"
    "New: {observations}\nAt most {max_words} words."
)


def patch(client, scope_id: str, body: object):
    return client.patch(f"{API}/scopes/{scope_id}", body, content_type="application/json")


def edit(client, scope_id: str, text: str, version: int):
    return patch(client, scope_id, {"consolidation": text, "expected_version": version})


@pytest.fixture
def scope(store):
    return ScopeFactory.create(store=store, user_id="u1")


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def test_patch_settings(api, scope):
    body = {"is_active": False, "consolidation_threshold": 3, "consolidation_max_words": 120}
    response = patch(api, scope.id, body)
    assert response.status_code == 200
    updated = response.json()
    assert {k: updated[k] for k in body} == body
    assert api.get(f"{API}/scopes/{scope.id}").json() == updated
    assert patch(api, scope.id, {}).json() == updated


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"consolidation_threshold": 0}, "consolidation_threshold"),
        ({"consolidation_threshold": 1001}, "consolidation_threshold"),
        ({"consolidation_threshold": "5"}, "consolidation_threshold"),
        ({"consolidation_threshold": None}, "consolidation_threshold"),
        ({"consolidation_max_words": 49}, "consolidation_max_words"),
        ({"consolidation_max_words": 5001}, "consolidation_max_words"),
        ({"is_active": "yes"}, "is_active"),
        ({"name": "renamed"}, "name"),
        ({"consolidation": "text"}, "expected_version"),
        ({"expected_version": 0}, "consolidation"),
        ({"consolidation": None, "expected_version": 0}, "consolidation"),
    ],
)
def test_invalid_patch_is_422_naming_the_field(api, scope, body, field):
    error = assert_error(patch(api, scope.id, body), 422, "validation_error")
    assert field in [d["field"] for d in error["details"]], error["details"]


def test_threshold_bounds_are_accepted(api, scope):
    assert patch(api, scope.id, {"consolidation_threshold": 1}).status_code == 200
    assert patch(api, scope.id, {"consolidation_threshold": 1000}).status_code == 200
    assert patch(api, scope.id, {"consolidation_max_words": 50}).status_code == 200


def test_a_template_naming_an_unknown_placeholder_is_refused_by_name(api, scope):
    error = assert_error(
        patch(api, scope.id, {"consolidation_prompt": CONSOLIDATION_TEMPLATE + " {mood}"}),
        422,
        "validation_error",
    )
    assert "{mood}" in error["message"]
    assert error["details"][0]["field"] == "consolidation_prompt"
    assert error["details"][0]["unknown"] == ["mood"]


def test_a_template_lacking_a_placeholder_is_refused_by_name(api, scope):
    error = assert_error(
        patch(api, scope.id, {"extraction_prompt": "Remember the important things."}),
        422,
        "validation_error",
    )
    assert "{conversation}" in error["message"]
    assert error["details"][0]["field"] == "extraction_prompt"


def test_a_refused_template_changes_nothing(api, scope):
    body = {"consolidation_threshold": 3, "consolidation_prompt": "no placeholders"}
    assert_error(patch(api, scope.id, body), 422, "validation_error")
    assert api.get(f"{API}/scopes/{scope.id}").json()["consolidation_threshold"] == 10


def test_a_template_is_saved_as_a_scope_override_version(api, store, scope):
    response = patch(api, scope.id, {"consolidation_prompt": CONSOLIDATION_TEMPLATE})
    assert response.status_code == 200
    assert response.json()["consolidation_prompt"] == CONSOLIDATION_TEMPLATE
    saved = prompt_current(store=store, agent_id="agent-1", kind="consolidation", scope_id=scope.id)
    assert saved is not None
    assert (saved.version, saved.text, saved.author) == (1, CONSOLIDATION_TEMPLATE, "api:test-key")

    in_effect = effective_prompt(
        store=store, agent_id="agent-1", kind="consolidation", scope_id=scope.id
    )
    assert (in_effect.source, in_effect.version) == ("scope", 1)

    cleared = patch(api, scope.id, {"consolidation_prompt": None}).json()
    assert cleared["consolidation_prompt"] is None
    saved = prompt_current(store=store, agent_id="agent-1", kind="consolidation", scope_id=scope.id)
    assert saved is not None and saved.version == 2 and saved.cleared
    in_effect = effective_prompt(
        store=store, agent_id="agent-1", kind="consolidation", scope_id=scope.id
    )
    assert in_effect.source == "default"  # the cleared override no longer applies
    patch(api, scope.id, {"consolidation_prompt": None})  # clearing twice adds nothing
    again = prompt_current(store=store, agent_id="agent-1", kind="consolidation", scope_id=scope.id)
    assert again.version == 2


def test_a_shards_extraction_prompt_is_guidance_not_a_template(api, store):
    shard = ScopeFactory.create(store=store, shard=True, extraction_prompt="Product ideas")
    guidance = "Product feedback, e.g. {feature requests}"
    response = patch(api, shard.id, {"extraction_prompt": f"  {guidance} "})
    assert response.status_code == 200
    assert response.json()["extraction_prompt"] == guidance
    # Versioned like a template (its history, diff and revert are the prompt editor's).
    saved = prompt_current(store=store, agent_id="agent-1", kind="extraction", scope_id=shard.id)
    assert (saved.version, saved.text) == (1, guidance)
    error = assert_error(patch(api, shard.id, {"extraction_prompt": None}), 422, "validation_error")
    assert error["details"][0]["field"] == "extraction_prompt"


def test_hand_edit_then_stale_version_is_409(api, scope):
    response = edit(api, scope.id, "  Gene prefers Rust.  ", 0)
    assert response.status_code == 200
    edited = response.json()
    assert (edited["consolidation"], edited["consolidation_version"]) == ("Gene prefers Rust.", 1)
    error = assert_error(edit(api, scope.id, "Gene prefers Go.", 0), 409, "conflict")
    assert error["details"] == {"expected_version": 0}
    assert api.get(f"{API}/scopes/{scope.id}").json()["consolidation"] == "Gene prefers Rust."


def test_a_stale_edit_applies_none_of_the_request(api, scope):
    edit(api, scope.id, "v1", 0)
    body = {"consolidation": "v2", "expected_version": 0, "consolidation_threshold": 4}
    assert_error(patch(api, scope.id, body), 409, "conflict")
    assert api.get(f"{API}/scopes/{scope.id}").json()["consolidation_threshold"] == 10


def test_history_is_newest_first_and_paginated(api, scope):
    for version, text in enumerate(["one", "two", "three"]):
        edit(api, scope.id, text, version)
    first = api.get(f"{API}/scopes/{scope.id}/consolidations?limit=2").json()
    assert [e["version"] for e in first["items"]] == [3, 2]
    assert set(first["items"][0]) == VERSION_FIELDS
    entry = first["items"][0]
    assert (entry["text"], entry["trigger"], entry["actor"]) == (
        "three",
        "hand_edit",
        "api:test-key",
    )
    assert entry["created_at"].endswith("Z")
    cursor = first["next_cursor"]
    assert cursor
    second = api.get(f"{API}/scopes/{scope.id}/consolidations?limit=2&cursor={cursor}").json()
    assert [e["text"] for e in second["items"]] == ["one"]
    assert second["next_cursor"] is None


def test_history_of_a_new_scope_is_empty(api, scope):
    body = api.get(f"{API}/scopes/{scope.id}/consolidations").json()
    assert body == {"items": [], "next_cursor": None}


def test_restore_makes_a_new_version_with_the_old_text(api, scope):
    edit(api, scope.id, "first", 0)
    edit(api, scope.id, "second", 1)
    response = api.post(f"{API}/scopes/{scope.id}/consolidations/1/restore")
    assert response.status_code == 201
    restored = response.json()
    assert set(restored) == VERSION_FIELDS
    assert (restored["version"], restored["text"], restored["restored_from"]) == (3, "first", 1)
    assert (restored["trigger"], restored["actor"]) == ("restore", "api:test-key")
    scope_now = api.get(f"{API}/scopes/{scope.id}").json()
    assert (scope_now["consolidation"], scope_now["consolidation_version"]) == ("first", 3)


@pytest.mark.parametrize(("version", "status"), [("7", 404), ("0", 404), ("-1", 422), ("x", 422)])
def test_restore_of_an_unknown_version(api, scope, version, status):
    edit(api, scope.id, "first", 0)
    response = api.post(f"{API}/scopes/{scope.id}/consolidations/{version}/restore")
    assert_error(response, status, "not_found" if status == 404 else "validation_error")


def test_consolidate_with_nothing_pending_is_409(api, scope):
    assert_error(api.post(f"{API}/scopes/{scope.id}/consolidate"), 409, "conflict")


def test_consolidate_runs_below_the_threshold(api, store, scope, run_tasks):
    ObservationFactory.create(store=store, scope=scope, content="Gene prefers Rust.")
    with run_tasks():
        response = api.post(f"{API}/scopes/{scope.id}/consolidate")
    assert response.status_code == 202
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert (job["kind"], job["scope_id"], job["status"]) == ("consolidation", scope.id, "succeeded")
    scope_now = api.get(f"{API}/scopes/{scope.id}").json()
    assert (scope_now["consolidation_version"], scope_now["pending_count"]) == (1, 0)
    history = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert history[0]["trigger"] == "api" and len(history[0]["absorbed_observation_ids"]) == 1


def test_other_agents_scopes_are_404_for_a_limited_key(limited_api, store):
    other = ScopeFactory.create(store=store, agent_id="agent-2")
    assert_error(patch(limited_api, other.id, {"is_active": False}), 404, "not_found")
    assert_error(limited_api.get(f"{API}/scopes/{other.id}/consolidations"), 404, "not_found")
    assert_error(limited_api.post(f"{API}/scopes/{other.id}/consolidate"), 404, "not_found")
    restore = f"{API}/scopes/{other.id}/consolidations/1/restore"
    assert_error(limited_api.post(restore), 404, "not_found")
    assert_error(patch(limited_api, "not-an-id", {}), 404, "not_found")
