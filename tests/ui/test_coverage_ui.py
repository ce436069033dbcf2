"""Questions memory must answer, through the UI (issue 38, item 2), on the four scope
types: defaults per scope kind on the prompts page, a scope's own on its page, and
History marking each version's coverage, a version that loses an answer marked."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory

TRAITS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}
PLAN = "The account is on the Pro billing plan since March 2026."
EDITOR = "The preferred editor is Helix with vim keys."
QUESTIONS = ["What billing plan is the account on?", "Which timezone applies?"]


def _consolidate(client, store, scope, run_tasks, text: str) -> None:
    ObservationFactory.create(
        store=store, scope=scope_get(store=store, scope_id=scope.id), content=text
    )
    with run_tasks():
        response = client.post(reverse("ui:consolidate", args=[scope.id]))
    assert response.status_code in (200, 302, 303), response.status_code


@pytest.mark.parametrize("kind", list(TRAITS))
def test_history_marks_coverage_and_a_version_that_loses_an_answer(
    client_as, store, fake_openai, run_tasks, kind
):
    scope = ScopeFactory.create(store=store, agent_id="a1", **TRAITS[kind])
    operator = client_as("operator")
    saved = operator.post(
        reverse("ui:agent_questions", args=["a1", kind]), {"questions": "\n".join(QUESTIONS)}
    )
    assert saved.status_code == 302
    prompts = operator.get(reverse("ui:prompts") + "?agent=a1").content.decode()
    assert f'data-questions-kind="{kind}"' in prompts and QUESTIONS[0] in prompts
    _consolidate(operator, store, scope, run_tasks, PLAN)
    fake_openai.reply(f"{EDITOR}\n\nANSWERS:\nQ1: NOT STATED\nQ2: NOT STATED")
    _consolidate(operator, store, scope, run_tasks, EDITOR)

    page = client_as("viewer").get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert page.count('data-coverage="1/2"') == 1  # v1
    assert 'data-coverage="0/2" data-loses="1"' in page  # v2
    assert "loses 1 answer" in page and "answers 1 of 2" in page
    assert "Pro billing plan" in page  # v1's answer, quoted
    assert f"The agent's default for {kind} scopes (v1)" in page
    assert 'data-current-status="lost"' in page


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_scope_sets_its_own_questions_and_bad_ones_are_refused(client_as, store, kind):
    scope = ScopeFactory.create(store=store, agent_id="a1", **TRAITS[kind])
    operator = client_as("operator")
    url = reverse("ui:scope_questions", args=[scope.id])
    operator.post(url, {"questions": "Which timezone applies?"})
    assert scope_get(store=store, scope_id=scope.id).questions == ["Which timezone applies?"]
    page = operator.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "This scope's own questions (v1)" in page

    response = operator.post(url, {"questions": "\n".join(f"q{n}?" for n in range(6))}, follow=True)
    assert "Questions not saved: at most 5 questions" in response.content.decode()
    response = operator.post(url, {"questions": "x" * 201}, follow=True)
    assert "longer than 200 characters" in response.content.decode()
    assert scope_get(store=store, scope_id=scope.id).questions == ["Which timezone applies?"]
    operator.post(url, {"questions": ""})  # empty: back to the kind's default
    assert scope_get(store=store, scope_id=scope.id).questions is None


def test_a_viewer_cannot_set_questions(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    viewer = client_as("viewer")
    response = viewer.post(reverse("ui:scope_questions", args=[scope.id]), {"questions": "Who?"})
    assert response.status_code == 403
    response = viewer.post(
        reverse("ui:agent_questions", args=["a1", "group"]), {"questions": "Who?"}
    )
    assert response.status_code == 403
    assert scope_get(store=store, scope_id=scope.id).questions is None
