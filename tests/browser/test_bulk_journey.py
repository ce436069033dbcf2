"""Clean up one bad session from the observation log: the filter bar says "N match", the
confirmation page shows the sample, and applying deletes exactly those (a job)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_bulk_delete_a_bad_session_from_the_log(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group("support-bot", "g-eden"))
    bad = [
        observation_add(
            store=store, scope=group, content=f"Bot loop output number {i}",
            source_session_id="s-broken", related_user_ids=["gene", "mel"],
        )
        for i in range(6)
    ]  # fmt: skip
    kept = observation_add(
        store=store, scope=group, content="The team ships on Fridays.",
        source_session_id="s-fine", related_user_ids=["mel"],
    )  # fmt: skip
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{group.id}/")

    page.get_by_text("Bulk actions by filter").click()
    page.get_by_label("Session id").fill("s-broken")
    page.get_by_label("Session id").press("Enter")
    page.get_by_test_id("bulk-count").wait_for()
    assert page.get_by_test_id("bulk-count").inner_text() == "6 matches"
    page.locator("#bulk-bar").screenshot(path=str(artifacts_dir / "bulk_bar_preview.png"))

    page.locator("#bulk-preview a", has_text="apply").click()
    page.get_by_role("heading", name="6 observations match").wait_for()
    rows = page.locator("table.obs-table tbody tr")
    assert rows.count() == 6
    assert "The team ships" not in page.locator("table.obs-table").inner_text()
    page.screenshot(path=str(artifacts_dir / "bulk_confirm.png"), full_page=True)

    page.get_by_role("button", name="Delete: 6 observations").click()
    page.get_by_text("Bulk deletion of 6 observations started").wait_for()
    page.screenshot(path=str(artifacts_dir / "bulk_done.png"), full_page=True)
    for observation in bad:
        assert store.observations.get(ObjectId(observation.id)).deleted
    assert not store.observations.get(ObjectId(kept.id)).deleted
