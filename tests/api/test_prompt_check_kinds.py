"""Prompt checks for consolidation and propagation (issue 38, item 3), through the API on
each scope type that takes such a prompt: a draft that fails a check the prompt in effect
passes is a regression; `PATCH /scopes/{id}` refuses it (422 naming the field) unless
`save_anyway`. The strict fake answers as a model would: a draft that says DROP PLAN
leaves the plan out, one that says SHARE ALL copies the personal line too."""

from __future__ import annotations

import json

import pytest

from streams.prompts import DEFAULT_TEMPLATES
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_wire import (
    consolidation_lines,
    default_responder,
    faithful_memory,
    prompt_text,
    propagation_prompt,
    with_answers,
)

JSON = "application/json"
TRAITS = {"individual": {}, "group": {"group": True}, "collective": {"collective": True},
          "shard": {"shard": True}}  # fmt: skip
PLAN = "The account is on the Pro billing plan."
EMAIL = "Gene's email is gene@example.com."
DEPLOY = "The team deploys on Fridays."
CONSOLIDATION_CHECK = {
    "name": "keeps the plan",
    "kind": "consolidation",
    "conversation": f"{PLAN}\nThe editor is Helix.",
    "expectations": [
        {"type": "keeps", "value": "Pro billing plan"},
        {"type": "not_contains", "value": "password"},
        {"type": "answers", "value": "What billing plan is the account on?"},
        {"type": "within_words", "value": "50"},
    ],
}
PROPAGATION_CHECK = {
    "name": "copies nothing personal",
    "kind": "propagation",
    "conversation": f"{EMAIL}\n{DEPLOY}",
    "expectations": [
        {"type": "nothing_personal", "value": "Gene"},
        {"type": "lands_in", "value": "collective"},
    ],
}


def responder(request):
    text = prompt_text(request)
    if request.task == "consolidation" and consolidation_lines(request):
        memory = faithful_memory(request)
        if "DROP PLAN" in text:
            memory = " ".join(s for s in memory.split(". ") if "plan" not in s) or "Helix."
        return with_answers(request, memory)
    if request.task == "propagation":
        shown = propagation_prompt(text)
        shared = [o for o in shown.observations if "SHARE ALL" in text or "@" not in o]
        return json.dumps(
            {
                "observations": [
                    {"content": o, "scope": "collective", "supports": None} for o in shared
                ]
            }
        )
    return default_responder(request)


def _send(api, method, path, body):
    return getattr(api, method)(f"{API}{path}", json.dumps(body), content_type=JSON)


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_consolidation_draft_that_drops_a_kept_fact_regresses_and_is_refused(
    api, store, fake_openai, kind
):
    fake_openai.set_responder(responder)
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **TRAITS[kind])
    created = _send(
        api, "post", "/agents/agent-1/prompt-checks", {**CONSOLIDATION_CHECK, "scope_id": scope.id}
    )
    assert created.status_code == 201, created.content
    assert created.json()["kind"] == "consolidation"
    draft = DEFAULT_TEMPLATES["consolidation"] + "\nDROP PLAN"
    ran = _send(api, "post", "/agents/agent-1/prompt-checks/run",
                {"kind": "consolidation", "scope_id": scope.id, "text": draft}).json()  # fmt: skip
    (result,) = ran["results"]
    assert result["in_effect"]["passed"], result
    assert "Pro billing plan" in result["in_effect"]["text"]
    assert ran["regressions"] == 1 and result["regressed"]
    assert "the memory keeps 'Pro billing plan'" in result["draft"]["failures"]
    assert any("answers" in f for f in result["draft"]["failures"])

    refused = _send(api, "patch", f"/scopes/{scope.id}", {"consolidation_prompt": draft})
    error = assert_error(refused, 422, "validation_error")
    assert error["details"][0]["field"] == "consolidation_prompt"
    assert error["details"][0]["checks"] == ["keeps the plan"]
    assert api.get(f"{API}/scopes/{scope.id}").json()["consolidation_prompt"] is None
    saved = _send(
        api, "patch", f"/scopes/{scope.id}", {"consolidation_prompt": draft, "save_anyway": True}
    )
    assert saved.status_code == 200 and saved.json()["consolidation_prompt"] == draft


@pytest.mark.parametrize("kind", ["individual", "group"])
def test_a_propagation_draft_that_copies_a_personal_line_regresses(api, store, fake_openai, kind):
    fake_openai.set_responder(responder)
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **TRAITS[kind])
    created = _send(
        api, "post", "/agents/agent-1/prompt-checks", {**PROPAGATION_CHECK, "scope_id": scope.id}
    )
    assert created.status_code == 201, created.content
    draft = DEFAULT_TEMPLATES["propagation"] + "\nSHARE ALL"
    ran = _send(api, "post", "/agents/agent-1/prompt-checks/run",
                {"kind": "propagation", "scope_id": scope.id, "text": draft}).json()  # fmt: skip
    (result,) = ran["results"]
    assert result["in_effect"]["passed"] and result["in_effect"]["items"] == [
        {"content": DEPLOY, "scope": "collective"}
    ]
    assert result["draft"]["failures"] == ["no copy is personal (nor holds) 'Gene'"]
    refused = _send(api, "patch", f"/scopes/{scope.id}", {"propagation_prompt": draft})
    assert (
        assert_error(refused, 422, "validation_error")["details"][0]["field"]
        == "propagation_prompt"
    )


def test_checks_of_one_kind_do_not_run_for_another(api, store, fake_openai):
    fake_openai.set_responder(responder)
    _send(api, "post", "/agents/agent-1/prompt-checks", CONSOLIDATION_CHECK)
    ran = _send(api, "post", "/agents/agent-1/prompt-checks/run", {"kind": "propagation"}).json()
    assert ran["results"] == []


@pytest.mark.parametrize(
    ("kind", "expectation"),
    [("consolidation", {"type": "lands_in", "value": "collective"}),
     ("propagation", {"type": "keeps", "value": "x"}),
     ("consolidation", {"type": "within_words", "value": "many"})],
)  # fmt: skip
def test_an_expectation_of_another_kind_is_422(api, kind, expectation):
    body = {"name": "n", "kind": kind, "conversation": "A fact.", "expectations": [expectation]}
    response = _send(api, "post", "/agents/agent-1/prompt-checks", body)
    assert assert_error(response, 422, "validation_error")["details"][0]["field"] == "expectations"
