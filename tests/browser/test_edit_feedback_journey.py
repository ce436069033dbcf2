"""Correct a memory in Chromium (issue 30, item 4): on the scope page the inline Edit
says it saved, shows "rebuild pending" and the rebuild's live banner, and the
consolidation turns to the corrected version without a reload; on the Users page the
same correction is made in place, with no switch to the scope."""

from __future__ import annotations

import threading
from collections.abc import Iterator
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
FACTS = ["Gene lives in Porto.", "Gene kiteboards in Zanzibar every spring."]


@pytest.fixture
def gene(store):
    scope = ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-gene", display_name="Gene"
    )
    observations = [ObservationFactory.create(store=store, scope=scope, content=t) for t in FACTS]
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        expected_version=0,
        text=" ".join(FACTS),
        absorbed_ids=[o.id for o in observations],
        trigger="threshold",
        actor=None,
    )
    return scope, observations


@pytest.fixture
def slow_worker(monkeypatch) -> Iterator[None]:
    """Jobs start 2.5 s after they are scheduled, as a busy worker would pick them up."""

    timers: list[threading.Timer] = []

    def enqueue_later(jobs: list[Job]) -> None:
        for job in jobs:
            timers.append(threading.Timer(2.5, TASKS_BY_KIND[job.kind].delay, args=[job.id]))
            timers[-1].start()

    monkeypatch.setattr("streams.actions.base._dispatcher", enqueue_later)
    yield
    for timer in timers:  # a job still to run belongs to this test, not the next
        timer.join()


def test_correct_an_absorbed_observation_inline_on_the_scope_page(
    live_server, page, gene, make_user, artifacts_dir: Path, settings, slow_worker
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope, observations = gene
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    page.evaluate("window.__notReloaded = true")
    assert "Porto" in page.locator("#consolidation-panel .consolidation-text").inner_text()

    row = page.locator(f"#obs-{observations[0].id}")
    row.locator("text=Edit").click()
    page.locator(f"#id_content_{observations[0].id}").fill("Gene lives in Braga.")
    page.screenshot(path=str(artifacts_dir / "edit_inline_form.png"), full_page=True)
    page.locator(f"#obs-{observations[0].id} button:has-text('Save')").click()

    page.locator("#flash .message", has_text="Observation saved.").wait_for()
    assert "Rebuild pending" in page.locator("#flash").inner_text()
    page.locator("#rebuild-pending").wait_for()  # the panel refreshed by itself
    assert page.locator("#rebuild-pill").inner_text() == "rebuild pending"
    page.locator("#job-status[data-status]").wait_for()  # the rebuild's live banner
    # htmx settles the swapped row after the flash lands: wait for the class, do not sample it.
    page.locator(f"#obs-{observations[0].id}.just-saved").wait_for()
    page.screenshot(path=str(artifacts_dir / "edit_inline_saved.png"), full_page=True)

    page.locator("#consolidation-panel .version", has_text="v2").wait_for(timeout=20_000)
    assert page.evaluate("window.__notReloaded === true")
    assert page.locator("#rebuild-pending").count() == 0
    text = page.locator("#consolidation-panel .consolidation-text").inner_text()
    assert "Porto" not in text
    assert page.locator('#job-status[data-status="succeeded"]').count() == 1
    page.screenshot(path=str(artifacts_dir / "edit_inline_rebuilt.png"), full_page=True)


def test_correct_an_observation_in_place_on_the_users_page(
    live_server, page, gene, make_user, artifacts_dir: Path, settings, slow_worker
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    _scope, observations = gene
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/users/?agent=support-bot&user=u-gene")
    page.evaluate("window.__notReloaded = true")
    row = page.locator(f"#obs-{observations[1].id}")
    row.locator("text=Edit").click()
    page.locator(f"#id_content_{observations[1].id}").fill("Gene kiteboards in Tarifa.")
    page.locator(f"#obs-{observations[1].id} button:has-text('Save')").click()
    page.locator("#flash .message", has_text="Observation saved.").wait_for()
    assert "Rebuild pending" in page.locator("#flash").inner_text()
    saved = page.locator(f"#obs-{observations[1].id}.just-saved")
    saved.wait_for()  # htmx settles the swapped row after the flash lands
    assert "Gene kiteboards in Tarifa." in saved.inner_text()
    assert page.evaluate("window.__notReloaded === true")
    assert page.url.endswith("/users/?agent=support-bot&user=u-gene")  # no page switch
    page.locator("#user-rebuild-pill").wait_for()  # the memory above says it is rebuilding
    page.screenshot(path=str(artifacts_dir / "edit_users_page_saved.png"), full_page=True)
    # ... and turns to the corrected version by itself.
    page.locator("#user-memory", has_text="Tarifa").wait_for(timeout=20_000)
    assert "Zanzibar" not in page.locator("#user-memory .consolidation-text").inner_text()
    assert page.locator("#user-rebuild-pill").count() == 0
    assert page.evaluate("window.__notReloaded === true")
    page.screenshot(path=str(artifacts_dir / "edit_users_page_rebuilt.png"), full_page=True)
