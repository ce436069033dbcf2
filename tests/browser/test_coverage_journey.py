"""An operator in a browser (issue 38, item 2): sets the questions a group's memory must
answer on the Prompts page, two consolidations run (offline provider, the real fold),
and History marks the version that lost an answer; the scope page says so too."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium
from tests.task_mode import run_job, settle

pytestmark = [pytest.mark.browser, needs_chromium]
AGENT = "support-bot"
PLAN = "The team account is on the Pro billing plan since March 2026."
LATER = [
    "The team moved its weekly planning meeting to Thursday mornings at nine in room four.",
    "The team ships the mobile release every second Tuesday after the regression run ends.",
    "The team keeps its incident runbooks in the shared wiki under the operations heading.",
]


def _consolidate(store, scope_id: str, texts: list[str]) -> None:
    for text in texts:
        observation_add(store=store, scope=scope_get(store=store, scope_id=scope_id), content=text)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope_id), trigger="manual", actor="t"
    )
    run_job(store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r))
    settle(store)


def test_history_marks_the_version_that_lost_an_answer(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = ScopeFactory.create(
        store=store, agent_id=AGENT, group=True, display_name="Eden Team",
        consolidation_max_words=50,
    )  # fmt: skip
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/prompts/?agent={AGENT}")
    row = page.locator('tr[data-questions-kind="group"]')
    row.locator("textarea").fill("What billing plan is the team on?\nWhen is the planning meeting?")
    row.locator("button:has-text('Save group questions')").click()
    page.get_by_text("Questions for group scopes saved.").wait_for()
    assert "v1 by ui:olivia" in page.locator('tr[data-questions-kind="group"]').inner_text()

    _consolidate(store, scope.id, [PLAN])  # v1 answers the plan
    _consolidate(store, scope.id, LATER)  # v2: over 50 words, the oldest sentence goes

    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    lost = page.locator('tr[data-version="2"] details.coverage')
    assert lost.get_attribute("data-loses") == "1"
    assert "loses 1 answer" in lost.inner_text()
    lost.locator("summary").click()
    assert (
        "What billing plan is the team on?" in lost.locator("li[data-status='lost']").inner_text()
    )
    kept = page.locator('tr[data-version="1"] details.coverage')
    assert "answers 1 of 2" in kept.inner_text()
    kept.locator("summary").click()
    assert "Pro billing plan" in kept.inner_text()
    assert page.locator('#questions-in-effect [data-current-status="lost"]').count() == 1
    page.locator("#questions").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "coverage_history.png"), full_page=True)
