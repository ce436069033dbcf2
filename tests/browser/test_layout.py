"""Layout and live numbers in a real browser: a 4,000-character word never widens a page,
and the scope header (pending count, "Consolidate now") follows a finished job."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from memory_admin.jobs.tasks import run_consolidation
from streams.core.documents import Job
from streams.jobs import job_create
from tests.browser.test_journeys import _sign_in
from tests.factories import ObservationFactory, ScopeFactory
from tests.services import needs_chromium
from tests.ui.helpers import scope_with_history

pytestmark = [pytest.mark.browser, needs_chromium]

LONG_WORD = "x" * 4000


def _fits(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_a_4000_character_word_does_not_widen_any_page(
    live_server, page, store, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-long", display_name="Long"
    )
    ObservationFactory.create(store=store, scope=scope, content=LONG_WORD)
    ObservationFactory.create(
        store=store, scope=scope, content=f"https://example.com/{LONG_WORD[:3900]}"
    )
    job = job_create(store=store, kind="consolidation", agent_id="support-bot", scope_id=scope.id)
    store.jobs.finish(
        job.id_oid, status="failed", now=job.created_at, error=f"boom {LONG_WORD}", llm_calls=0
    )
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")

    pages = {
        "scope": f"/scopes/{scope.id}/",
        "users": "/users/?agent=support-bot&user=u-long",
        "jobs": "/jobs/",
        "job": f"/jobs/{job.id}/",
        "search": f"/search/?agent=support-bot&user=u-long&q={LONG_WORD[:1500]}",
    }
    for name, path in pages.items():
        page.goto(f"{live_server.url}{path}")
        assert page.locator("h1").count() == 1, name
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert _fits(page), f"{name} is {width[0]}px wide in a {width[1]}px viewport"
    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    page.screenshot(path=str(artifacts_dir / "long_word_scope.png"), full_page=False)


def test_the_header_and_button_follow_a_finished_consolidation(
    live_server, page, store, make_user, settings, monkeypatch
):
    def enqueue_later(jobs: list[Job]) -> None:
        for job in jobs:
            threading.Timer(1.0, run_consolidation.delay, args=[job.id]).start()

    settings.MEMORY_LLM_PROVIDER = "offline"
    monkeypatch.setattr("streams.actions.base._dispatcher", enqueue_later)
    gene = scope_with_history(store)
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{gene.id}/")
    assert page.locator("#head-pending").inner_text() == "3"
    assert page.locator("#consolidate-button").is_enabled()

    page.click("#consolidate-button")
    page.locator('#job-status[data-status="succeeded"]').wait_for(timeout=15_000)
    page.wait_for_function("document.querySelector('#head-pending').textContent === '0'")
    assert page.locator("#consolidate-button").is_disabled()
    # The cost-and-health panel follows too: the run is counted.
    runs = "#scope-usage [data-runs-days='1']"
    page.wait_for_function(f"document.querySelector(\"{runs}\").textContent.trim() === '1'")
