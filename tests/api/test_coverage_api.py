"""Questions memory must answer, through the API (issue 38, item 2), on the four scope
types: the agent's default per scope kind (`/agents/{id}/questions/{kind}`), a scope's
override (`PATCH /scopes/{id}` `questions`), and each version's `coverage` in
`GET /scopes/{id}/consolidations`, a version that loses an answer marked; a malformed
trailer stores the version with coverage unknown and the job says so; 422 names the field."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_wire import Reply

JSON = "application/json"
TRAITS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}
PLAN = "The account is on the Pro billing plan since March 2026."
EDITOR = "The preferred editor is Helix with vim keys."
QUESTIONS = ["What billing plan is the account on?", "Which timezone applies?"]


def _scope(store, kind: str):
    return ScopeFactory.create(store=store, agent_id="agent-1", **TRAITS[kind])


def _send(client, method: str, path: str, body):
    return getattr(client, method)(f"{API}{path}", json.dumps(body), content_type=JSON)


def _consolidate(api, scope_id: str, run_tasks, text: str) -> dict:
    response = _send(api, "post", f"/scopes/{scope_id}/observations", {"content": text})
    assert response.status_code == 201, response.content
    with run_tasks():
        response = api.post(f"{API}/scopes/{scope_id}/consolidate")
    assert response.status_code == 202, response.content
    return api.get(f"{API}/jobs/{response.json()['job_id']}").json()


@pytest.mark.parametrize("kind", list(TRAITS))
def test_coverage_per_version_and_a_lost_answer_is_marked(api, store, fake_openai, run_tasks, kind):
    scope = _scope(store, kind)
    saved = _send(api, "put", f"/agents/agent-1/questions/{kind}", {"questions": QUESTIONS})
    assert saved.status_code == 200, saved.content
    assert (saved.json()["version"], saved.json()["questions"]) == (1, QUESTIONS)
    job = _consolidate(api, scope.id, run_tasks, PLAN)
    assert job["status"] == "succeeded"
    assert job["result"]["coverage"]["answered"] == 1
    fake_openai.reply(f"{EDITOR}\n\nANSWERS:\nQ1: NOT STATED\nQ2: NOT STATED")
    job = _consolidate(api, scope.id, run_tasks, EDITOR)
    assert job["result"]["coverage_lost"] == QUESTIONS[:1]
    newer, older = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert [c["status"] for c in older["coverage"]] == ["answered", "unanswered"]
    assert "Pro billing plan" in older["coverage"][0]["answer"] and not older["loses_answer"]
    assert newer["coverage"] == [
        {"question": QUESTIONS[0], "answer": None, "status": "lost"},
        {"question": QUESTIONS[1], "answer": None, "status": "unanswered"},
    ]
    assert newer["loses_answer"] is True


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_scope_override_wins_and_null_falls_back(api, store, fake_openai, run_tasks, kind):
    scope = _scope(store, kind)
    _send(api, "put", f"/agents/agent-1/questions/{kind}", {"questions": ["Who owns it?"]})
    patched = _send(api, "patch", f"/scopes/{scope.id}", {"questions": QUESTIONS[:1]})
    assert patched.status_code == 200, patched.content
    assert patched.json()["questions"] == QUESTIONS[:1]
    _consolidate(api, scope.id, run_tasks, PLAN)
    (version,) = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert [c["question"] for c in version["coverage"]] == QUESTIONS[:1]
    cleared = _send(api, "patch", f"/scopes/{scope.id}", {"questions": None})
    assert cleared.json()["questions"] is None
    entries = api.get(f"{API}/audit", {"object_id": scope.id}).json().get("items", [])
    changed = [e["summary"].get("questions") for e in entries if e["action"] == "scope.update"]
    assert changed and all(c for c in changed)


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_malformed_trailer_stores_the_version_and_says_coverage_unknown(
    api, store, fake_openai, run_tasks, kind
):
    scope = _scope(store, kind)
    _send(api, "patch", f"/scopes/{scope.id}", {"questions": QUESTIONS})
    fake_openai.enqueue(Reply(f"{PLAN}\n\nANSWERS:\nQ1: Pro", strict=False))
    job = _consolidate(api, scope.id, run_tasks, PLAN)
    assert job["status"] == "succeeded"
    assert job["result"]["coverage_unknown"] == "the trailer answers 1 of the 2 questions"
    (version,) = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert version["text"] == PLAN
    assert [(c["status"], c["answer"]) for c in version["coverage"]] == [("unknown", None)] * 2


@pytest.mark.parametrize(
    ("questions", "index"),
    [(["q1?", "q2?", "q3?", "q4?", "q5?", "q6?"], None), (["fine?", " "], 1), (["x" * 201], 0)],
    ids=["over-five", "empty", "too-long"],
)
@pytest.mark.parametrize("kind", list(TRAITS))
def test_bad_questions_are_422_naming_the_field(api, store, kind, questions, index):
    scope = _scope(store, kind)
    for response in (
        _send(api, "put", f"/agents/agent-1/questions/{kind}", {"questions": questions}),
        _send(api, "patch", f"/scopes/{scope.id}", {"questions": questions}),
    ):
        error = assert_error(response, 422, "validation_error")
        assert error["details"][0]["field"] == "questions"
        assert error["details"][0].get("index") == index
    assert api.get(f"{API}/agents/agent-1/questions/{kind}").json()["version"] == 0
    assert api.get(f"{API}/scopes/{scope.id}").json()["questions"] is None


def test_an_unknown_scope_kind_is_422(api):
    response = api.get(f"{API}/agents/agent-1/questions/everyone")
    assert_error(response, 422, "validation_error")
