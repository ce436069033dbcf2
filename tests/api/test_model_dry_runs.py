"""A dry run with two models side by side (issue 42 item 5) through the API (the editor's in
tests/ui/test_limits_ui.py): the model server receives each model, with the same prompt;
nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_wire import default_responder, prompt_text

AGENT = "agent-1"
TALK = "user: I moved to Lisbon last month.\nassistant: Noted!"
ANSWER = json.dumps(
    {"observations": [{"content": "Gene moved to Lisbon.", "scope": "individual", "about": []}]}
)


def dry_run(api: Any, body: dict[str, Any]) -> Any:
    return api.post(
        f"{API}/agents/{AGENT}/prompt-dry-runs", json.dumps(body), content_type="application/json"
    )


def test_an_extraction_runs_once_per_model_with_the_same_prompt(
    api, store, fake_openai: FakeOpenAI
):
    fake_openai.set_responder(lambda r: ANSWER if r.task == "extraction" else default_responder(r))
    body = {"kind": "extraction", "models": ["gpt-4o-mini", "gpt-4.1"], "conversation": TALK}
    response = dry_run(api, body)
    assert response.status_code == 200, response.content
    runs = response.json()["runs"]
    assert [r["model_requested"] for r in runs] == ["gpt-4o-mini", "gpt-4.1"]
    assert [r["model"] for r in runs] == ["gpt-4o-mini", "gpt-4.1"]  # the server's answer
    sent = fake_openai.chat_requests
    assert [r.body["model"] for r in sent] == ["gpt-4o-mini", "gpt-4.1"]
    assert prompt_text(sent[0]) == prompt_text(sent[1])
    assert all(
        r["items"] == [{"scope": "individual", "content": "Gene moved to Lisbon."}] for r in runs
    )
    assert (
        store.scopes.find_by_identity(
            agent_id=AGENT,
            scope_type="individual",
            user_id="dry-run-user",
            group_id=None,
            name=None,
        )
        is None
    )


@pytest.mark.parametrize("kind", ["individual", "group", "collective", "shard"])
def test_a_consolidation_dry_run_compares_models_in_every_scope_type(
    api, store, fake_openai: FakeOpenAI, kind
):
    traits = {"individual": {}, "group": {"group": True}, "collective": {"collective": True}}
    scope = ScopeFactory.create(
        store=store, agent_id=AGENT, **{**traits, "shard": {"shard": True}}[kind]
    )
    for text in ("The team deploys on Fridays.", "Deploys need a second reviewer."):
        added = api.post(
            f"{API}/scopes/{scope.id}/observations",
            {"content": text},
            content_type="application/json",
        )
        assert added.status_code == 201, added.content
    fake_openai.set_responder(default_responder)
    body = {"kind": "consolidation", "models": ["gpt-4o", "gpt-4.1-mini"], "scope_id": scope.id}
    response = dry_run(api, body)
    assert response.status_code == 200, response.content
    consolidations = [r for r in fake_openai.chat_requests if r.task == "consolidation"]
    assert [r.body["model"] for r in consolidations] == ["gpt-4o", "gpt-4.1-mini"]
    assert all("Fridays" in (run["text"] or "") for run in response.json()["runs"])
    assert api.get(f"{API}/scopes/{scope.id}").json()["consolidation_version"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "extraction", "models": ["gpt-4o"], "conversation": TALK}, "models"),
        ({"kind": "extraction", "models": ["gpt-4o", "gpt-4o"], "conversation": TALK}, "models"),
        ({"kind": "extraction", "models": ["gpt-4o", "gpt-9"], "conversation": TALK}, "models"),
        ({"kind": "extraction", "models": ["a", "b", "c"], "conversation": TALK}, "models"),
        ({"kind": "extraction", "models": ["gpt-4o", "gpt-4.1"]}, "conversation"),
        ({"kind": "consolidation", "models": ["gpt-4o", "gpt-4.1"]}, "scope_id"),
        ({"kind": "summary", "models": ["gpt-4o", "gpt-4.1"]}, "kind"),
        ({"kind": "extraction", "models": ["gpt-4o", "gpt-4.1"], "colour": 1}, "colour"),
    ],
)
def test_bad_dry_run_input_is_422_naming_the_field(api, store, fake_openai, body, field):
    error = assert_error(dry_run(api, body), 422, "validation_error")
    assert field in json.dumps(error["details"])
    assert fake_openai.chat_requests == []
