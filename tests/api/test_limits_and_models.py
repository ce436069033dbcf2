"""Limits and models per scope (issue 42 item 5) through the API: agent and scope settings,
what the model server receives, the caps the extraction prompt states, the drops counted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bson import ObjectId

from streams.jobs import job_get
from streams.records.audit import audit_page
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_wire import default_responder, prompt_text

AGENT = "agent-1"
JSON = "application/json"
REMEMBER = "Please remember that my scrum meeting is on 10 September."
TRAITS: dict[str, dict[str, Any]] = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def patch(api: Any, path: str, body: Any) -> Any:
    return api.patch(f"{API}{path}", json.dumps(body), content_type=JSON)


def ingest(api: Any, *messages: str, session: str = "s1") -> dict[str, Any]:
    body = {
        "user_id": "u1",
        "user_name": "Gene",
        "messages": [
            {"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(messages)
        ],
    }
    response = api.post(
        f"{API}/agents/{AGENT}/sessions/{session}/messages", body, content_type=JSON
    )
    assert response.status_code == 202, response.content
    return response.json()


def extraction_answer(*items: tuple[str, str]) -> str:
    return json.dumps(
        {
            "observations": [
                {"content": content, "scope": scope, "about": [], "sources": []}
                for content, scope in items
            ]
        }
    )


def test_agent_settings_show_each_value_in_effect_and_its_level(api, store):
    store.agents.ensure(AGENT, now=ScopeFactory.build().created_at)
    body = api.get(f"{API}/agents/{AGENT}").json()
    assert body["extraction_model"] is None and body["scope_defaults"] == {}
    effect = body["in_effect"]
    assert effect["extraction_model"] == {"value": "gpt-4o-mini", "source": "code"}
    words = {kind: effect["scope_types"][kind]["item_words"] for kind in TRAITS}
    assert words == {
        "individual": {"value": 25, "source": "code"},
        "group": {"value": 30, "source": "code"},
        "collective": {"value": 35, "source": "code"},
        "shard": {"value": 35, "source": "code"},
    }
    response = patch(
        api,
        f"/agents/{AGENT}",
        {
            "extraction_model": "gpt-4.1-mini",
            "scope_defaults": {"group": {"item_words": 40, "consolidation_model": "gpt-4.1"}},
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["extraction_model"] == "gpt-4.1-mini"
    assert body["scope_defaults"] == {"group": {"item_words": 40, "consolidation_model": "gpt-4.1"}}
    group = body["in_effect"]["scope_types"]["group"]
    assert group["item_words"] == {"value": 40, "source": "agent"}
    assert group["consolidation_model"] == {"value": "gpt-4.1", "source": "agent"}
    assert group["item_cap"] == {"value": 20, "source": "code"}
    # A null removes one default and keeps the others.
    body = patch(api, f"/agents/{AGENT}", {"scope_defaults": {"group": {"item_words": None}}})
    assert body.json()["scope_defaults"] == {"group": {"consolidation_model": "gpt-4.1"}}
    entries = audit_page(store=store, action="agent.limits").items
    assert len(entries) == 2 and entries[-1].summary["extraction_model"]["to"] == "gpt-4.1-mini"


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_scope_override_wins_over_the_agent_default_in_every_scope_type(api, store, kind):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS[kind])
    patch(api, f"/agents/{AGENT}", {"scope_defaults": {kind: {"item_cap": 8}}})
    changes: dict[str, Any] = {"item_words": 12, "item_cap": 3, "consolidation_model": "gpt-4.1"}
    if kind in ("individual", "group"):  # the collective and its shards do not propagate
        changes["propagation_model"] = "gpt-4.1-mini"
    response = patch(api, f"/scopes/{scope.id}", changes)
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in changes} == changes
    # Null: back to the agent's default, then the code's.
    cleared = patch(api, f"/scopes/{scope.id}", {"item_cap": None, "item_words": None}).json()
    assert cleared["item_cap"] is None and cleared["item_words"] is None
    from streams.memory.scope_limits import scope_limits

    limits = scope_limits(store=store, scope=store.scopes.get(ObjectId(scope.id)))
    assert (limits.item_cap.value, limits.item_cap.source) == (8, "agent")
    expected_words = {"individual": 25, "group": 30}.get(kind, 35)
    assert (limits.item_words.value, limits.item_words.source) == (expected_words, "code")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("item_words", 0),
        ("item_words", -5),
        ("item_words", 10_000),
        ("item_cap", 0),
        ("item_cap", -1),
        ("item_cap", 1_000_000),
        ("item_cap", "5"),
        ("consolidation_model", "gpt-9-imaginary"),
        ("propagation_model", "no-such-model"),
        ("item_limit", 5),  # not a setting
    ],
)
def test_bad_scope_limits_are_422_naming_the_field(api, store, field, value):
    scope = ScopeFactory.create(store=store, agent_id=AGENT)
    error = assert_error(patch(api, f"/scopes/{scope.id}", {field: value}), 422, "validation_error")
    assert field in json.dumps(error["details"])
    fresh = store.scopes.get(ObjectId(scope.id))
    assert (fresh.item_words, fresh.item_cap, fresh.consolidation_model) == (None, None, None)


@pytest.mark.parametrize("kind", ["collective", "shard"])
def test_the_collective_and_shards_have_no_propagation_model(api, store, kind):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS[kind])
    error = assert_error(
        patch(api, f"/scopes/{scope.id}", {"propagation_model": "gpt-4o"}), 422, "validation_error"
    )
    assert [d["field"] for d in error["details"]] == ["propagation_model"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"extraction_model": "gpt-9-imaginary"}, "extraction_model"),
        ({"extraction_model": ""}, "extraction_model"),
        ({"scope_defaults": {"team": {"item_words": 30}}}, "team"),
        ({"scope_defaults": {"group": {"item_words": 0}}}, "item_words"),
        ({"scope_defaults": {"group": {"item_cap": 101}}}, "item_cap"),
        ({"scope_defaults": {"group": {"consolidation_model": "nope"}}}, "consolidation_model"),
        ({"scope_defaults": {"group": {"colour": "red"}}}, "colour"),
        ({"scope_defaults": None}, "scope_defaults"),
        ({"models": ["gpt-4o"]}, "models"),
    ],
)
def test_bad_agent_limits_are_422_naming_the_field(api, store, body, field):
    store.agents.ensure(AGENT, now=ScopeFactory.build().created_at)
    error = assert_error(patch(api, f"/agents/{AGENT}", body), 422, "validation_error")
    assert field in json.dumps(error["details"])
    agent = store.agents.get(AGENT)
    assert agent.extraction_model is None and agent.scope_defaults == {}


def test_the_model_server_receives_the_agents_extraction_model(
    api, store, run_tasks, fake_openai: FakeOpenAI
):
    store.agents.ensure(AGENT, now=ScopeFactory.build().created_at)
    patch(api, f"/agents/{AGENT}", {"extraction_model": "gpt-4.1-mini"})
    fake_openai.set_responder(
        lambda r: (
            extraction_answer(("Gene has scrum on 10 September.", "individual:u1"))
            if r.task == "extraction"
            else default_responder(r)
        )
    )
    with run_tasks():
        body = ingest(api, REMEMBER)
    [sent] = [r for r in fake_openai.chat_requests if r.task == "extraction"]
    assert sent.body["model"] == "gpt-4.1-mini"
    job = job_get(store=store, job_id=body["formation_job_id"])
    assert job.status == "succeeded" and job.result["model"] == "gpt-4.1-mini"


def test_the_prompt_states_each_targets_cap_and_drops_are_counted(
    api, store, run_tasks, fake_openai: FakeOpenAI
):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u1")
    patch(api, f"/scopes/{scope.id}", {"item_cap": 2, "item_words": 8})
    long = "Gene keeps a very long list of meeting notes for every single sprint review."
    fake_openai.set_responder(
        lambda r: (
            extraction_answer(
                ("Gene has scrum on 10 September.", "individual:u1"),
                ("Gene likes tea.", "individual:u1"),
                ("Gene likes green tea.", "individual:u1"),  # past the cap of 2
                (long, "individual:u1"),  # 14 words, past 8
                ("Scrum meetings happen in September.", "collective"),
            )
            if r.task == "extraction"
            else default_responder(r)
        )
    )
    with run_tasks():
        body = ingest(api, REMEMBER)
    [sent] = [r for r in fake_openai.chat_requests if r.task == "extraction"]
    prompt = prompt_text(sent)
    assert "- individual:u1: at most 2 observations, each at most 8 words" in prompt
    assert "- collective: at most 5 observations, each at most 35 words" in prompt
    job = job_get(store=store, job_id=body["formation_job_id"])
    assert job.status == "succeeded", job.error
    result = job.result
    assert (result["dropped_over_cap"], result["dropped_over_words"]) == (1, 1)
    assert result["dropped"] == 2 and result["observations"] == 3


@pytest.mark.parametrize("kind", list(TRAITS))
def test_consolidation_sends_the_scopes_model_in_every_scope_type(
    api, store, run_tasks, fake_openai: FakeOpenAI, kind
):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS[kind])
    patch(api, f"/agents/{AGENT}", {"scope_defaults": {kind: {"consolidation_model": "gpt-4o"}}})
    response = patch(
        api, f"/scopes/{scope.id}", {"consolidation_model": "gpt-4.1", "consolidation_threshold": 2}
    )
    assert response.status_code == 200, response.content
    fake_openai.set_responder(default_responder)
    with run_tasks():
        for text in ("The team deploys on Fridays.", "Deploys need a second reviewer."):
            added = api.post(
                f"{API}/scopes/{scope.id}/observations", {"content": text}, content_type=JSON
            )
            assert added.status_code == 201, added.content
    consolidations = [r for r in fake_openai.chat_requests if r.task == "consolidation"]
    assert consolidations and {r.body["model"] for r in consolidations} == {"gpt-4.1"}
    [version] = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"][:1]
    assert version["version"] == 1


def test_propagation_sends_the_source_scopes_model(api, store, run_tasks, fake_openai: FakeOpenAI):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, group=True)
    patch(
        api,
        f"/scopes/{scope.id}",
        {"propagation_model": "gpt-4.1-mini", "consolidation_threshold": 2},
    )
    fake_openai.set_responder(default_responder)
    with run_tasks():
        for text in ("The team deploys on Fridays.", "Deploys need a second reviewer."):
            api.post(f"{API}/scopes/{scope.id}/observations", {"content": text}, content_type=JSON)
    propagations = [r for r in fake_openai.chat_requests if r.task == "propagation"]
    assert propagations and {r.body["model"] for r in propagations} == {"gpt-4.1-mini"}
    consolidations = [r for r in fake_openai.chat_requests if r.task == "consolidation"]
    assert {r.body["model"] for r in consolidations} == {"gpt-4o"}  # MEMORY_LLM_MODEL_SLOW
