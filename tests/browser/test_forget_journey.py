"""Forget a user in Chromium: the receipt appears at once, updates itself while the job
runs (a worker picks it up a moment later), and reads as a receipt, not an error."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from memory_admin.jobs.tasks import TASKS_BY_KIND
from streams.core.documents import Job
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
AGENT = "support-bot"


def test_forget_a_user_and_watch_the_receipt_fill_in(
    live_server, page, store, make_user, artifacts_dir: Path, settings, monkeypatch
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    for version in range(4):
        note = observation_add(store=store, scope=individual, content=f"Gene fact {version}.")
        consolidation_commit(
            store=store,
            scope=scope_get(store=store, scope_id=individual.id),
            expected_version=version,
            text=f"Gene, as of version {version + 1}.",
            absorbed_ids=[note.id],
            trigger="threshold",
            actor=None,
        )

    def enqueue_later(jobs: list[Job]) -> None:
        for job in jobs:
            threading.Timer(2.5, TASKS_BY_KIND[job.kind].delay, args=[job.id]).start()

    monkeypatch.setattr("streams.actions.base._dispatcher", enqueue_later)
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/users/?agent={AGENT}&user=u-gene")
    page.click("text=Forget this user…")
    page.fill("#id_confirm", "u-gene")
    page.click("button:has-text('Forget this user')")
    page.wait_for_url(re.compile(r"job="))
    page.evaluate("window.__notReloaded = true")
    receipt = page.locator("#forget-receipt")
    assert receipt.get_attribute("data-status") in ("queued", "running")
    assert page.locator("#unknown-user").count() == 0
    page.screenshot(path=str(artifacts_dir / "forget_receipt_running.png"), full_page=True)

    page.locator('#forget-receipt[data-status="succeeded"]').wait_for(timeout=20_000)
    assert page.evaluate("window.__notReloaded === true")  # htmx polling, no reload
    assert page.locator("#unknown-user").count() == 0
    text = page.locator("#forget-receipt").inner_text()
    assert "consolidation versions deleted (the individual memory's history)" in text
    row = page.locator('#forget-receipt tr[data-count="memory_consolidations"] td.num')
    assert row.inner_text() == "4"
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text)
    assert re.search(r"finished \d{4}-\d\d-\d\d \d\d:\d\d UTC", text)
    page.screenshot(path=str(artifacts_dir / "forget_receipt_done.png"), full_page=True)
    assert page.locator("#user-main").get_attribute("hx-trigger") is None  # polling stopped
