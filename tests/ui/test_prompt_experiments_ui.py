"""Prompt experiments in the UI (issue 38, item 4): the editor's Experiment panel (scope,
inputs, budget) → estimate → run; the experiment's page with its table, totals and
drill-down; the prompt's history lists and links it; re-run; roles and bad input."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.memory.scopes import scope_get
from streams.prompts import DEFAULT_TEMPLATES
from tests.factories import ObservationFactory, ScopeFactory
from tests.ui.helpers import HTMX

pytestmark = pytest.mark.django_db

TRAITS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}
PLAN = "The account is on the Pro billing plan since March 2026."
EDITOR = "The preferred editor is Helix with vim keys."
DRAFT = DEFAULT_TEMPLATES["consolidation"] + "\nWrite short sentences."


def consolidated(client, store, run_tasks, kind: str):
    """A scope with version 1 (the plan) and the editor pending."""
    scope = ScopeFactory.create(store=store, agent_id="a1", **TRAITS[kind])
    ObservationFactory.create(store=store, scope=scope, content=PLAN)
    with run_tasks():
        response = client.post(reverse("ui:consolidate", args=[scope.id]))
    assert response.status_code in (200, 302, 303)
    fresh = scope_get(store=store, scope_id=scope.id)
    ObservationFactory.create(store=store, scope=fresh, content=EDITOR)
    return fresh


def form(scope_id: str, **changes) -> dict:
    return {"text": DRAFT, "scope_id": scope_id, "sessions": 5, "budget_tokens": 100_000} | changes


@pytest.mark.parametrize("kind", list(TRAITS))
def test_estimate_run_table_drill_down_history_and_rerun(
    client_as, store, fake_openai, run_tasks, kind
):
    operator = client_as("operator")
    scope = consolidated(operator, store, run_tasks, kind)
    fake_openai.reset()
    editor_url = reverse("ui:prompt_edit", args=["a1", "consolidation"])
    editor = operator.get(editor_url).content.decode()
    assert 'id="experiment-form"' in editor and "None yet" in editor

    estimate_url = reverse("ui:prompt_experiment_estimate", args=["a1", "consolidation"])
    estimate = operator.post(estimate_url, form(scope.id), **HTMX)
    assert estimate.status_code == 200
    page = estimate.content.decode()
    assert "<strong>2</strong> inputs found" in page and "within budget" in page
    assert 'id="experiment-run"' in page and not fake_openai.chat_requests

    with run_tasks():
        started = operator.post(
            reverse("ui:prompt_experiment_start", args=["a1", "consolidation"]), form(scope.id)
        )
    assert started.status_code == 302
    shown = operator.get(started["Location"]).content.decode()
    assert 'id="experiment-status">succeeded' in shown
    assert "Covered <strong>2</strong> of 2 inputs" in shown
    assert shown.count('class="experiment-unit') == 2 and 'id="experiment-totals"' in shown
    assert 'id="unit-0"' in shown and "Helix" in shown  # the drill-down holds both answers
    assert 'id="experiment-rerun"' in shown

    listed = operator.get(editor_url).content.decode()
    experiment_id = started["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert (
        f'href="{started["Location"]}"' in listed and f'data-experiment="{experiment_id}"' in listed
    )

    with run_tasks():
        again = operator.post(reverse("ui:prompt_experiment_rerun", args=[experiment_id]))
    assert again.status_code == 302 and again["Location"] != started["Location"]
    rerun_page = operator.get(again["Location"]).content.decode()
    assert "a re-run of" in rerun_page and started["Location"] in rerun_page


def test_bad_input_is_shown_beside_its_field(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    operator = client_as("operator")
    url = reverse("ui:prompt_experiment_estimate", args=["a1", "consolidation"])
    cases = [
        (form(scope.id, sessions=0), "id_exp_sessions"),
        (form(scope.id, budget_tokens=0), "id_exp_budget"),
        (form("0123456789abcdef01234567"), "scope not found"),
        (form(scope.id, text="No placeholders."), "The template in the editor"),
        (form(scope.id), "no pending"),  # nothing to run on is not an error: 0 inputs
    ]
    for data, shown in cases[:4]:
        response = operator.post(url, data, **HTMX)
        assert response.status_code == 422, data
        assert "field-error" in response.content.decode() and shown in response.content.decode()
    empty = operator.post(url, cases[4][0], **HTMX)
    assert empty.status_code == 200 and "<strong>0</strong> inputs found" in empty.content.decode()
    start = reverse("ui:prompt_experiment_start", args=["a1", "consolidation"])
    assert operator.post(start, form(scope.id, sessions=51), **HTMX).status_code == 422


def test_roles_and_unknown_experiments(client_as, store, fake_openai, run_tasks):
    operator = client_as("operator")
    scope = consolidated(operator, store, run_tasks, "individual")
    with run_tasks():
        started = operator.post(
            reverse("ui:prompt_experiment_start", args=["a1", "consolidation"]), form(scope.id)
        )
    viewer = client_as("viewer")
    page = viewer.get(started["Location"])
    assert page.status_code == 200 and 'id="experiment-rerun"' not in page.content.decode()
    start = reverse("ui:prompt_experiment_start", args=["a1", "consolidation"])
    assert viewer.post(start, form(scope.id)).status_code == 403
    experiment_id = started["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert (
        viewer.post(reverse("ui:prompt_experiment_rerun", args=[experiment_id])).status_code == 403
    )
    for bad in ("0123456789abcdef01234567", "nope"):
        assert viewer.get(reverse("ui:prompt_experiment", args=[bad])).status_code == 404
    partial = viewer.get(started["Location"], **HTMX).content.decode()
    assert partial.lstrip().startswith('<section class="panel" id="experiment-table"')
