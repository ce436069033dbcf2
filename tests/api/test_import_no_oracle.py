"""Import is no existence oracle across agents (issue 44): a document naming the scope
and observation ids of another agent is answered exactly as one naming ids that exist
nowhere, and the other agent's memory is neither read, moved nor changed."""

from __future__ import annotations

import copy
import json

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.api.conftest import API


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _other_agents_scope(store) -> str:
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a2", "zed"))
    for i in range(2):
        observation_add(store=store, scope=scope, content=f"Zed's secret fact {i}.")
    return scope.id


def _as_a1(document: dict) -> dict:
    """The export rewritten as an agent-a1 key would send it: its own agent, its user."""
    document = copy.deepcopy(document)
    document["agent_id"] = "a1"
    for block in document["scopes"]:
        block["user_id"] = "carol"
        block["display_name"] = None
        for n, item in enumerate(block["observations"]):
            item.pop("digest", None)
            item["content"] = f"Carol likes tea number {n}."
            item["related_user_ids"] = ["carol"]
    return document


def _fresh_ids(document: dict) -> dict:
    document = copy.deepcopy(document)
    for block in document["scopes"]:
        block["id"] = str(ObjectId())
        for item in block["observations"]:
            item["id"] = str(ObjectId())
            item["scope_id"] = block["id"]
    return document


def _import(api, document: dict):
    return api.post(
        f"{API}/agents/a1/import", json.dumps(document), content_type="application/json"
    )


def test_ids_of_another_agent_are_answered_as_ids_that_do_not_exist(api, store):
    other = _other_agents_scope(store)
    exported = api.get(f"{API}/scopes/{other}/export").json()
    assert exported["scopes"][0]["id"] == other
    naming_theirs = _as_a1(exported)
    naming_nothing = _fresh_ids(naming_theirs)
    theirs = _import(api, naming_theirs)
    # A separate agent-a1 user for the second document, so both start from nothing.
    for block in naming_nothing["scopes"]:
        block["user_id"] = "dave"
    nothing = _import(api, naming_nothing)
    assert (theirs.status_code, theirs.json()) == (nothing.status_code, nothing.json())
    assert theirs.status_code == 200, theirs.content
    # The other agent's scope and observations are as they were.
    after = api.get(f"{API}/scopes/{other}/observations").json()["items"]
    assert sorted(o["content"] for o in after) == ["Zed's secret fact 0.", "Zed's secret fact 1."]
    assert {o["scope_id"] for o in after} == {other}


def test_importing_the_same_document_again_stores_nothing_twice(api, store):
    other = _other_agents_scope(store)
    document = _as_a1(api.get(f"{API}/scopes/{other}/export").json())
    first = _import(api, document)
    again = _import(api, document)
    assert first.status_code == again.status_code == 200, (first.content, again.content)
    assert again.json()["observations_imported"] == 0
    assert again.json()["scopes_created"] == 0


def test_new_scope_and_observation_ids_are_not_one_counter_apart(store):
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "ids"))
    ids = [
        ObjectId(observation_add(store=store, scope=scope, content=f"Fact {i}.").id)
        for i in range(20)
    ]
    tails = [int.from_bytes(oid.binary[4:], "big") for oid in ids]
    steps = {b - a for a, b in zip(tails, tails[1:], strict=False)}
    assert len(steps) > 10, steps  # not a counter: each step random
    assert ids == sorted(ids)  # still in the order made (lists page by id)
