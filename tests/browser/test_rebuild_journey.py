"""Delete an absorbed observation on the scope page: "rebuild pending", then a new version
without it, without a reload (a worker picks the rebuild up a moment later)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memory_admin.jobs.tasks import TASKS_BY_KIND
from streams.core.documents import Job
from streams.memory.consolidation import consolidation_commit
from streams.memory.scopes import scope_get
from tests.browser.test_journeys import _sign_in
from tests.factories import ObservationFactory, ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
FACTS = [
    "The team deploys on Fridays.",
    "Gene kiteboards in Zanzibar every spring.",
    "Standups start at nine.",
]


def test_delete_an_absorbed_observation_then_watch_the_rebuild(
    live_server, page, store, make_user, artifacts_dir: Path, settings, monkeypatch
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = ScopeFactory.create(store=store, agent_id="support-bot", group=True)
    absorbed = [ObservationFactory.create(store=store, scope=scope, content=t) for t in FACTS]
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        expected_version=0,
        text=" ".join(FACTS),
        absorbed_ids=[o.id for o in absorbed],
        trigger="threshold",
        actor=None,
    )

    def enqueue_later(jobs: list[Job]) -> None:
        for job in jobs:
            threading.Timer(2.5, TASKS_BY_KIND[job.kind].delay, args=[job.id]).start()

    monkeypatch.setattr("streams.actions.base._dispatcher", enqueue_later)
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    assert "Zanzibar" in page.locator("#consolidation-panel .consolidation-text").inner_text()

    page.locator(f'tr[data-observation-id="{absorbed[1].id}"] >> text=Delete').click()
    page.get_by_text("The consolidation already absorbed it").wait_for()
    page.screenshot(path=str(artifacts_dir / "rebuild_confirm.png"), full_page=True)
    page.click("button:has-text('Delete observation')")
    page.locator("#rebuild-pending").wait_for()
    assert page.locator("#rebuild-pill").inner_text() == "rebuild pending"
    assert "1 consolidation that held it is being rebuilt" in page.content()
    page.evaluate("window.__notReloaded = true")
    page.screenshot(path=str(artifacts_dir / "rebuild_pending.png"), full_page=True)

    page.locator("#consolidation-panel .version", has_text="v2").wait_for(timeout=20_000)
    assert page.evaluate("window.__notReloaded === true")
    assert page.locator("#rebuild-pending").count() == 0
    text = page.locator("#consolidation-panel .consolidation-text").inner_text()
    assert "Zanzibar" not in text and "Fridays" in text
    assert page.locator('#consolidation-panel tr[data-version="1"] >> text=redacted').count() == 1
    page.screenshot(path=str(artifacts_dir / "rebuild_done.png"), full_page=True)
