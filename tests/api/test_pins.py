"""Pins through the API: every later consolidation version (a threshold run, a rebuild after a
delete, a restore) holds each pinned sentence word for word, in every scope type; pins count
toward the word limit; forgetting a user removes the pins quoting them."""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId

from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_server import FakeOpenAI

PIN = "Never call Alice before 9 am."
TRAITS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def put_pins(api: Any, scope_id: str, pins: Any) -> Any:
    return api.put(f"{API}/scopes/{scope_id}/pins", {"pins": pins}, content_type="application/json")


def add(api: Any, scope_id: str, text: str) -> dict[str, Any]:
    response = api.post(
        f"{API}/scopes/{scope_id}/observations", {"content": text}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def model_answers(fake: FakeOpenAI, text: str) -> None:
    """Consolidations (and rebuilds) answer `text`, which never holds the pin."""
    fake.set_responder(lambda r: '{"observations": []}' if r.wants_json else text)


def scope_body(api: Any, scope_id: str) -> dict[str, Any]:
    return api.get(f"{API}/scopes/{scope_id}").json()


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_pin_survives_a_threshold_run_a_rebuild_after_delete_and_a_restore(
    api, store, run_tasks, fake_openai: FakeOpenAI, kind
):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **TRAITS[kind])
    patched = api.patch(
        f"{API}/scopes/{scope.id}", {"consolidation_threshold": 2}, content_type="application/json"
    )
    assert patched.status_code == 200

    # Version 1, before any pin: the model's text alone.
    model_answers(fake_openai, "Alice drinks green tea.")
    with run_tasks():
        add(api, scope.id, "Alice drinks green tea.")
        add(api, scope.id, "Alice likes tea in the morning.")
    assert scope_body(api, scope.id)["consolidation"] == "Alice drinks green tea."

    response = put_pins(api, scope.id, [PIN])
    assert response.status_code == 200, response.content
    assert response.json()["pins"] == [PIN]

    # A threshold run whose answer drops the pin: it is put back.
    model_answers(fake_openai, "Alice drinks green tea. Alice works from Porto.")
    with run_tasks():
        add(api, scope.id, "Alice works from Porto.")
        gone = add(api, scope.id, "Alice has a standing desk.")
    body = scope_body(api, scope.id)
    assert body["consolidation_version"] == 2
    assert PIN in body["consolidation"] and "Porto" in body["consolidation"]

    # A rebuild after a delete, the answer again without the pin.
    model_answers(fake_openai, "Alice drinks green tea.")
    with run_tasks():
        assert api.delete(f"{API}/observations/{gone['id']}").status_code == 204
    body = scope_body(api, scope.id)
    assert body["consolidation_version"] == 3 and body["needs_rebuild"] is False
    assert PIN in body["consolidation"]
    history = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert history[0]["trigger"] == "rebuild"

    # A restore of version 1 (made before the pin): the new version holds the pin too.
    with run_tasks():
        restored = api.post(f"{API}/scopes/{scope.id}/consolidations/1/restore")
    assert restored.status_code in (200, 201), restored.content
    body = scope_body(api, scope.id)
    assert body["consolidation_version"] == 4
    assert body["consolidation"].startswith("Alice drinks green tea.")
    assert PIN in body["consolidation"]


def test_pins_set_before_any_consolidation_hold_from_the_first_version(
    api, store, run_tasks, fake_openai: FakeOpenAI
):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    assert put_pins(api, scope.id, [PIN, "Deploys freeze on Fridays."]).status_code == 200
    model_answers(fake_openai, "The team uses Jira.")
    add(api, scope.id, "The team uses Jira.")
    with run_tasks():
        assert api.post(f"{API}/scopes/{scope.id}/consolidate").status_code == 202
    text = scope_body(api, scope.id)["consolidation"]
    assert "The team uses Jira." in text and PIN in text and "Deploys freeze on Fridays." in text
    history = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert "put back" in (history[0]["warning"] or "")


def test_pins_count_toward_the_word_limit(api, store, run_tasks, fake_openai: FakeOpenAI):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    api.patch(
        f"{API}/scopes/{scope.id}", {"consolidation_max_words": 50}, content_type="application/json"
    )
    long_pin = " ".join(f"w{n}" for n in range(40)) + "."  # 40 words
    over = put_pins(api, scope.id, [PIN, long_pin, "The team deploys only on Tuesdays."])
    error = assert_error(over, 422, "validation_error")  # 6 + 40 + 6 = 52 words
    assert "52 words" in error["message"]
    assert scope_body(api, scope.id)["pins"] == []

    assert put_pins(api, scope.id, [PIN, long_pin]).status_code == 200  # 46 words of 50
    model_answers(fake_openai, "One two three. Four five six. Seven eight nine ten.")
    add(api, scope.id, "One two three.")
    with run_tasks():
        api.post(f"{API}/scopes/{scope.id}/consolidate")
    text = scope_body(api, scope.id)["consolidation"]
    assert PIN in text and long_pin in text and len(text.split()) <= 50
    assert "One two three." in text and "Four five six." not in text  # made room


@pytest.mark.parametrize(
    "body",
    [
        {"pins": "not a list"},
        {"pins": [""]},
        {"pins": ["   "]},
        {"pins": ["x" * 1001]},
        {"pins": [f"Pin {n}." for n in range(51)]},
        {"pins": [PIN], "extra": 1},
        {},
    ],
)
def test_bad_pin_sets_are_422(api, store, body):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    response = api.put(f"{API}/scopes/{scope.id}/pins", body, content_type="application/json")
    assert_error(response, 422, "validation_error")


def test_pins_of_an_unknown_or_malformed_scope_are_404(api, limited_api, store):
    assert_error(put_pins(api, str(ObjectId()), [PIN]), 404, "not_found")
    assert_error(put_pins(api, "not-an-id", [PIN]), 404, "not_found")
    other = ScopeFactory.create(store=store, agent_id="agent-2", group=True)
    assert_error(put_pins(limited_api, other.id, [PIN]), 404, "not_found")


def test_an_empty_list_unpins_and_forget_user_removes_pins_quoting_them(
    api, store, run_tasks, fake_openai: FakeOpenAI
):
    alice = str(ObjectId())
    group = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    add(api, group.id, "The team orders lunch on Fridays.")
    # An observation of the group about Alice (as formation files it: related to her).
    from streams.memory.observations import observation_add
    from streams.memory.scopes import scope_get

    observation_add(
        store=store,
        scope=scope_get(store=store, scope_id=group.id),
        content="Alice is allergic to peanuts.",
        related_user_ids=[alice],
    )
    pins = ["Alice is allergic to peanuts.", "The team orders lunch on Fridays."]
    assert put_pins(api, group.id, pins).status_code == 200
    model_answers(fake_openai, "The team orders lunch on Fridays.")
    with run_tasks():
        response = api.delete(f"{API}/agents/agent-1/users/{alice}")
    assert response.status_code == 202, response.content
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "succeeded", job
    assert job["result"]["unpinned"] == 1
    body = scope_body(api, group.id)
    assert body["pins"] == ["The team orders lunch on Fridays."]
    assert "peanuts" not in (body["consolidation"] or "")

    assert put_pins(api, group.id, []).json()["pins"] == []


def test_a_word_limit_below_the_pins_is_422(api, store):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    pin = " ".join(f"w{n}" for n in range(60)) + "."
    assert put_pins(api, scope.id, [pin]).status_code == 200  # 60 of 500 words
    lowered = api.patch(
        f"{API}/scopes/{scope.id}", {"consolidation_max_words": 50}, content_type="application/json"
    )
    error = assert_error(lowered, 422, "validation_error")
    assert "60 words" in error["message"]
    assert scope_body(api, scope.id)["consolidation_max_words"] == 500
