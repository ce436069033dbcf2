"""An operator tunes a group's consolidation prompt in a browser (issue 38, item 4): the
editor's Experiment panel estimates, runs the draft beside the prompt in effect over the
scope's pending sets, and the experiment's page shows the table (fidelity, coverage,
tokens, cost per side) and the drill-down with both answers' word diffs.

The strict fake answers each consolidation prompt faithfully, with the trailer its
questions ask for; a prompt that says "Leave out tooling." gets the memory without the
sentences about tools, so the draft's side states less and loses an answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from streams.prompts import DEFAULT_TEMPLATES
from streams.prompts.questions import questions_save
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.fakes.openai_wire import (
    RecordedRequest,
    default_responder,
    faithful_memory,
    prompt_text,
    with_answers,
)
from tests.services import needs_chromium
from tests.task_mode import run_job, settle

pytestmark = [pytest.mark.browser, needs_chromium]
AGENT = "support-bot"
LEAVE_OUT = "Leave out tooling."
DOCS = Path(__file__).resolve().parents[2] / "docs"
FIRST = [
    "The team account is on the Pro billing plan since March 2026.",
    "The team writes its code in the Helix editor with vim keys.",
    "The team ships the mobile release every second Tuesday.",
]
LATER = [
    "The team moved its planning meeting to Thursday mornings at nine.",
    "The team keeps its incident runbooks in the Notion wiki.",
]
QUESTIONS = ["Which code editor is preferred?", "Where are the incident runbooks kept?"]


def answer(request: RecordedRequest) -> str:
    if request.task != "consolidation":
        return default_responder(request)
    memory = faithful_memory(request)
    if LEAVE_OUT in prompt_text(request):
        sentences = re.split(r"(?<=[.!?])\s+", memory)
        memory = " ".join(s for s in sentences if not re.search(r"Helix|Notion", s))
    return with_answers(request, memory)


def _consolidate(store: Any, scope_id: str, texts: list[str]) -> None:
    for text in texts:
        observation_add(store=store, scope=scope_get(store=store, scope_id=scope_id), content=text)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope_id), trigger="manual", actor="t"
    )
    run_job(store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r))
    settle(store)


def test_an_experiment_from_the_editor_to_its_table(
    live_server, page, store, make_user, artifacts_dir: Path, fake_openai
):
    fake_openai.set_responder(answer)
    scope = ScopeFactory.create(store=store, agent_id=AGENT, group=True, display_name="Eden Team")
    questions_save(store=store, agent_id=AGENT, scope_kind="group", questions=QUESTIONS, author="t")
    _consolidate(store, scope.id, FIRST)
    for text in LATER:
        observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content=text)
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/prompts/{AGENT}/consolidation/")
    page.locator("#id_text").fill(DEFAULT_TEMPLATES["consolidation"] + "\n" + LEAVE_OUT)
    page.locator("#id_exp_scope").fill(scope.id)
    page.locator("#id_exp_sessions").fill("5")
    page.locator("#id_exp_budget").fill("20000")
    page.locator("#experiment-estimate-button").click()
    page.locator("#experiment-estimate").wait_for()
    assert "2 inputs found" in page.locator("#experiment-estimate").inner_text()
    page.locator("#experiment").screenshot(path=str(artifacts_dir / "experiment_estimate.png"))
    page.locator("#experiment-run").click()
    page.wait_for_url(re.compile(r".*/prompt-experiments/[0-9a-f]{24}/$"))
    settle(store)
    page.reload()
    assert page.locator("#experiment-status").inner_text() == "succeeded"
    assert "Covered 2 of 2 inputs" in page.locator("#experiment-coverage").inner_text()
    first = page.locator('tbody.experiment-unit[data-unit="0"]')
    draft_row, in_effect_row = first.locator("tr").nth(0), first.locator("tr").nth(1)
    assert "1 / 2" in draft_row.inner_text()  # the draft no longer states the wiki
    assert "0 / 1" in draft_row.inner_text()  # nor the editor: an answer lost
    assert "0 / 2" in in_effect_row.inner_text() and "2 / 0" in in_effect_row.inner_text()
    page.locator("#unit-0 summary").click()
    assert page.locator("#unit-0 del").count() >= 1  # the words the draft dropped
    page.screenshot(path=str(artifacts_dir / "prompt_experiment.png"), full_page=True)
    page.locator("#experiment-table").screenshot(path=str(DOCS / "ui-prompt-experiment.png"))

    page.goto(f"{live_server.url}/prompts/{AGENT}/consolidation/")
    page.locator("#experiments a", has_text="Eden Team").click()
    page.wait_for_url(re.compile(r".*/prompt-experiments/[0-9a-f]{24}/$"))
    page.locator("#experiment-rerun").click()
    page.wait_for_url(re.compile(r".*/prompt-experiments/[0-9a-f]{24}/$"))
    assert "a re-run of" in page.locator(".page-head").inner_text()
