"""Prompt experiments through the API (issue 38, item 4): a draft beside the prompt in
effect over a scope's last sessions or pending sets, on the four scope types; the
estimate first, the budget cap, a failing model, the list, re-run, and bad input.

The strict fake answers what each prompt asks: an extraction cites the lines its prompt
shows, and a draft that says "Keep only the billing plan" gets only that."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streams.prompts import DEFAULT_TEMPLATES
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_server import FakeOpenAI, prompt_lines
from tests.fakes.openai_wire import RecordedRequest, default_responder, prompt_text

JSON = "application/json"
AGENT = "agent-1"
ONLY_PLAN = "Keep only the billing plan."
DRAFT = DEFAULT_TEMPLATES["extraction"] + "\n" + ONLY_PLAN
PLAN = "I am on the Pro billing plan since March."
EDITOR = "I write everything in the Helix editor."
TRAITS: dict[str, dict[str, Any]] = {
    "individual": {"user_id": "u1"},
    "group": {"group": True, "group_id": "g1"},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def post(client, path: str, body: dict[str, Any]):
    return client.post(f"{API}{path}", json.dumps(body), content_type=JSON)


def ingest_session(api, session_id: str = "s1") -> None:
    messages = [
        {"id": f"{session_id}-1", "role": "user", "content": PLAN},
        {"id": f"{session_id}-2", "role": "assistant", "content": "Noted."},
        {"id": f"{session_id}-3", "role": "user", "content": EDITOR},
        {"id": f"{session_id}-4", "role": "assistant", "content": "Good choice."},
    ]
    body = {
        "user_id": "u1",
        "user_name": "Gene",
        "groups": [{"id": "g1", "name": "Eden"}],
        "messages": messages,
    }
    response = post(api, f"/agents/{AGENT}/sessions/{session_id}/messages", body)
    assert response.status_code == 202, response.content


def extraction_answer(request: RecordedRequest) -> str:
    """Each user line as a fact in the speaker's memory, citing it; the billing plan only
    when the prompt asks for that."""
    if request.task != "extraction":
        return default_responder(request)
    lines = [line for line in prompt_lines(request) if line.speaker.startswith("Gene")]
    if ONLY_PLAN in prompt_text(request):
        lines = [line for line in lines if "billing" in line.text]
    items = [
        {"scope": "individual", "content": line.text, "sources": [line.message_id]}
        for line in lines
    ]
    return json.dumps({"observations": items})


def experiment_body(scope_id: str, **changes: Any) -> dict[str, Any]:
    body = {
        "kind": "extraction",
        "scope_id": scope_id,
        "draft": DRAFT,
        "sessions": 5,
        "budget_tokens": 1_000_000,
    }
    return body | changes


def start(api, run_tasks, body: dict[str, Any]) -> dict[str, Any]:
    with run_tasks():
        response = post(api, f"/agents/{AGENT}/prompt-experiments", body)
    assert response.status_code == 202, response.content
    started = response.json()
    assert started["job"]["kind"] == "prompt_experiment"
    found = api.get(f"{API}/prompt-experiments/{started['experiment']['id']}")
    assert found.status_code == 200, found.content
    return found.json()


def observation_count(store) -> int:
    return store.db["memory_observations"].count_documents({"agent_id": AGENT})


@pytest.mark.parametrize("kind", list(TRAITS))
def test_extraction_experiment_over_last_sessions(api, store, fake_openai, run_tasks, kind):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS[kind])
    ingest_session(api, "s1")
    ingest_session(api, "s2")
    fake_openai.set_responder(extraction_answer)
    before = observation_count(store)
    estimate = post(api, f"/agents/{AGENT}/prompt-experiments/estimate", experiment_body(scope.id))
    assert estimate.status_code == 200, estimate.content
    assert (estimate.json()["units"], estimate.json()["calls"]) == (2, 4)
    assert estimate.json()["within_budget"] is True
    assert not fake_openai.chat_requests  # an estimate calls no model
    experiment = start(api, run_tasks, experiment_body(scope.id))
    assert experiment["status"] == "succeeded"
    summary = experiment["summary"]
    assert (summary["planned"], summary["covered"], summary["stopped"]) == (2, 2, None)
    assert summary["draft"]["stored"] == 2 and summary["in_effect"]["stored"] == 4
    assert summary["routing_changes"] == 2 and summary["failed_units"] == 0
    assert summary["draft"]["prompt_tokens"] > 0 and summary["in_effect"]["calls"] == 2
    unit = experiment["units"][0]
    assert [i["content"] for i in unit["draft"]["items"]] == [PLAN]
    assert sorted(i["content"] for i in unit["in_effect"]["items"]) == sorted([PLAN, EDITOR])
    assert ONLY_PLAN in prompt_text(fake_openai.chat_requests[0])  # the draft's side first
    assert ONLY_PLAN not in prompt_text(fake_openai.chat_requests[1])
    assert observation_count(store) == before  # nothing an experiment does writes memory


def consolidated_scope(api, store, run_tasks, kind: str):
    """A scope with one version (absorbing the plan) and the editor pending."""
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS[kind])
    added = post(api, f"/scopes/{scope.id}/observations", {"content": PLAN})
    assert added.status_code == 201, added.content
    with run_tasks():
        assert api.post(f"{API}/scopes/{scope.id}/consolidate").status_code == 202
    added = post(api, f"/scopes/{scope.id}/observations", {"content": EDITOR})
    assert added.status_code == 201, added.content
    return scope


@pytest.mark.parametrize("kind", list(TRAITS))
def test_consolidation_experiment_over_pending_sets(api, store, fake_openai, run_tasks, kind):
    scope = consolidated_scope(api, store, run_tasks, kind)
    fake_openai.reset()
    draft = DEFAULT_TEMPLATES["consolidation"] + "\nWrite short sentences."
    body = experiment_body(scope.id, kind="consolidation", draft=draft)
    experiment = start(api, run_tasks, body)
    assert experiment["status"] == "succeeded"
    assert [u["label"] for u in experiment["units"]] == ["pending now", "version 1"]
    pending_now = experiment["units"][0]
    for side in ("draft", "in_effect"):
        assert pending_now[side]["error"] is None
        assert "Helix" in pending_now[side]["text"] and "Pro billing" in pending_now[side]["text"]
        assert pending_now[side]["fidelity"] == {
            "weighed": 1,
            "unstated": 0,
            "dropped_sentences": 0,
        }
    assert experiment["summary"]["draft"]["fidelity"]["weighed"] == 2
    prompts = [prompt_text(r) for r in fake_openai.chat_requests]
    assert sum("Write short sentences." in p for p in prompts) == 2
    versions = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert len(versions) == 1  # no version was written


@pytest.mark.parametrize("kind", ["individual", "group"])
def test_propagation_experiment_over_versions(api, store, fake_openai, run_tasks, kind):
    scope = consolidated_scope(api, store, run_tasks, kind)
    fake_openai.reset()
    draft = DEFAULT_TEMPLATES["propagation"] + "\nCopy nothing."
    experiment = start(api, run_tasks, experiment_body(scope.id, kind="propagation", draft=draft))
    assert experiment["status"] == "succeeded"
    assert [u["label"] for u in experiment["units"]] == ["version 1"]
    assert experiment["summary"]["covered"] == 1


def test_the_budget_stops_the_run_and_says_what_it_covered(api, store, fake_openai, run_tasks):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["individual"])
    for session_id in ("s1", "s2", "s3"):
        ingest_session(api, session_id)
    fake_openai.set_responder(extraction_answer)
    estimate = post(api, f"/agents/{AGENT}/prompt-experiments/estimate", experiment_body(scope.id))
    first, second, _third = (u["estimated_tokens"] for u in estimate.json()["per_unit"])
    assert first == second  # sessions alike: after the first, the second cannot fit in `first`
    budget = first
    capped = post(
        api,
        f"/agents/{AGENT}/prompt-experiments/estimate",
        experiment_body(scope.id, budget_tokens=budget),
    ).json()
    assert (capped["within_budget"], capped["units_within_budget"]) == (False, 1)
    experiment = start(api, run_tasks, experiment_body(scope.id, budget_tokens=budget))
    summary = experiment["summary"]
    assert (summary["planned"], summary["covered"], summary["stopped"]) == (3, 1, "budget")
    assert 0 < summary["spent_tokens"] <= budget
    assert len(fake_openai.chat_requests) == 2  # one input, both sides


def test_a_failing_model_is_recorded_for_its_input_and_the_run_goes_on(
    api, store, fake_openai: FakeOpenAI, run_tasks, settings
):
    settings.MEMORY_LLM_MAX_RETRIES = 0
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["individual"])
    ingest_session(api, "s1")
    ingest_session(api, "s2")
    fake_openai.set_responder(extraction_answer)
    fake_openai.fail(500)  # the first input's draft side
    fake_openai.delay(3.0, then="{}")  # its in-effect side times out (the timeout is 2 s)
    experiment = start(api, run_tasks, experiment_body(scope.id))
    assert experiment["status"] == "succeeded"
    failed, passed = experiment["units"]
    assert "LLM call failed" in failed["draft"]["error"]
    assert "LLM call failed" in failed["in_effect"]["error"]
    assert failed["failed"] is True and passed["failed"] is False
    assert passed["draft"]["stored"] == 1
    assert experiment["summary"]["failed_units"] == 1
    job = api.get(f"{API}/jobs/{experiment['job_id']}").json()
    assert job["status"] == "succeeded" and job["result"]["failed_units"] == 1


def test_list_pages_newest_first_and_rerun_keeps_the_earlier(api, store, fake_openai, run_tasks):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["individual"])
    ingest_session(api, "s1")
    fake_openai.set_responder(extraction_answer)
    first = start(api, run_tasks, experiment_body(scope.id))
    with run_tasks():
        response = api.post(f"{API}/prompt-experiments/{first['id']}/rerun")
    assert response.status_code == 202, response.content
    again = response.json()["experiment"]
    assert again["rerun_of"] == first["id"] and again["draft"] == DRAFT
    page = api.get(f"{API}/agents/{AGENT}/prompt-experiments", {"limit": 1}).json()
    assert [i["id"] for i in page["items"]] == [again["id"]] and page["next_cursor"]
    rest = api.get(
        f"{API}/agents/{AGENT}/prompt-experiments", {"limit": 1, "cursor": page["next_cursor"]}
    ).json()
    assert [i["id"] for i in rest["items"]] == [first["id"]]
    assert api.get(f"{API}/prompt-experiments/{again['id']}").json()["status"] == "succeeded"


def test_a_removed_source_withholds_the_words_of_its_input(api, store, fake_openai, run_tasks):
    scope = consolidated_scope(api, store, run_tasks, "individual")
    body = experiment_body(
        scope.id, kind="consolidation", draft=DEFAULT_TEMPLATES["consolidation"] + "\nBe brief."
    )
    experiment = start(api, run_tasks, body)
    pending_id = experiment["units"][0]["source_ids"][0]
    with run_tasks():
        assert api.delete(f"{API}/observations/{pending_id}").status_code in (200, 204)
    shown = api.get(f"{API}/prompt-experiments/{experiment['id']}").json()
    pending_now, version_1 = shown["units"]
    assert pending_now["withheld"] and pending_now["draft"]["text"] is None
    assert EDITOR.split()[-2] not in json.dumps(pending_now)
    assert version_1["withheld"] is None and version_1["draft"]["text"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"kind": "summary"}, "kind"),
        ({"sessions": 0}, "sessions"),
        ({"sessions": 51}, "sessions"),
        ({"budget_tokens": 0}, "budget_tokens"),
        ({"draft": "No placeholders at all."}, "draft"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(api, store, changes, field):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["individual"])
    for path in ("/prompt-experiments", "/prompt-experiments/estimate"):
        response = post(api, f"/agents/{AGENT}{path}", experiment_body(scope.id, **changes))
        error = assert_error(response, 422, "validation_error")
        assert field in json.dumps(error["details"]), error


def test_unknown_agent_scope_and_experiment_are_404(api, limited_api, store):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["individual"])
    other = ScopeFactory.create(store=store, agent_id="agent-2", **TRAITS["collective"])
    missing = "0123456789abcdef01234567"
    for agent, scope_id in (("agent-9", scope.id), (AGENT, missing), (AGENT, other.id)):
        response = post(api, f"/agents/{agent}/prompt-experiments", experiment_body(scope_id))
        assert_error(response, 404, "not_found")
    response = post(limited_api, "/agents/agent-2/prompt-experiments", experiment_body(other.id))
    assert_error(response, 404, "not_found")
    for experiment_id in (missing, "not-an-id"):
        assert_error(api.get(f"{API}/prompt-experiments/{experiment_id}"), 404, "not_found")
        assert_error(api.post(f"{API}/prompt-experiments/{experiment_id}/rerun"), 404, "not_found")


def test_duplicates_and_flags_are_counted_per_side(api, store, fake_openai, run_tasks):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["individual"])
    held = post(api, f"/scopes/{scope.id}/observations", {"content": PLAN})
    assert held.status_code == 201, held.content
    email = "Write to me at gene.hackman@example.com any time."
    messages = [
        {"id": "e-1", "role": "user", "content": PLAN},
        {"id": "e-2", "role": "user", "content": email},
    ]
    body = {"user_id": "u1", "user_name": "Gene", "messages": messages}
    assert post(api, f"/agents/{AGENT}/sessions/e1/messages", body).status_code == 202
    fake_openai.set_responder(extraction_answer)
    experiment = start(api, run_tasks, experiment_body(scope.id, sessions=1))
    (unit,) = experiment["units"]
    assert (unit["draft"]["stored"], unit["draft"]["duplicates"], unit["draft"]["flags"]) == (
        1,
        1,
        0,
    )
    assert unit["in_effect"]["stored"] == 2 and unit["in_effect"]["duplicates"] == 1
    assert unit["in_effect"]["flags"] >= 1  # the email address
    assert experiment["summary"]["in_effect"]["flags"] == unit["in_effect"]["flags"]


def test_forgetting_a_person_scrubs_the_inputs_about_them(api, store, fake_openai, run_tasks):
    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS["collective"])
    ingest_session(api, "s1")
    fake_openai.set_responder(extraction_answer)
    experiment = start(api, run_tasks, experiment_body(scope.id))
    assert experiment["units"][0]["user_ids"] == ["u1"]
    with run_tasks():
        forgot = api.delete(f"{API}/agents/{AGENT}/users/u1")
    assert forgot.status_code == 202, forgot.content
    receipt = api.get(f"{API}/jobs/{forgot.json()['job_id']}").json()["result"]
    assert receipt["deleted"]["memory_prompt_experiments"] == 1
    kept = store.db["memory_prompt_experiments"].find_one({"agent_id": AGENT})
    assert "Helix" not in json.dumps(kept, default=str) and "u1" not in kept["units"][0]["user_ids"]
    shown = api.get(f"{API}/prompt-experiments/{experiment['id']}").json()
    (unit,) = shown["units"]
    assert "forgotten" in unit["withheld"] and unit["in_effect"]["stored"] == 2
