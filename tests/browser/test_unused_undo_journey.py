"""An operator in Chromium (issue 42, item 7): opens the unused-memory report, follows a
scope's count to the bulk page with the filter "not retrieved in 30 days", deletes those,
and undoes the deletion from the bulk job's page; the texts are back."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from bson import ObjectId

from streams.core.documents import utcnow
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_unused_report_bulk_delete_and_undo(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group("support-bot", "g-eden"), display_name="Eden team"
    )
    stale = [
        observation_add(store=store, scope=group, content=f"Old rota note number {i}")
        for i in range(3)
    ]
    used = observation_add(store=store, scope=group, content="The team ships on Fridays.")
    store.observations.collection.update_many(
        {"scope_id": ObjectId(group.id)}, {"$set": {"created_at": utcnow() - timedelta(days=40)}}
    )
    store.observations.collection.update_one(
        {"_id": ObjectId(used.id)},
        {"$set": {"last_accessed_at": utcnow() - timedelta(days=1), "access_count": 3}},
    )
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/scopes/?agent=support-bot")
    page.click("#unused-link")
    row = page.locator(f"#unused-table tr[data-scope-id='{group.id}']")
    row.wait_for()
    assert row.locator("[data-col=unused]").inner_text() == "3"
    page.screenshot(path=str(artifacts_dir / "unused-report.png"), full_page=True)

    row.get_by_text("Review in bulk…").click()
    page.get_by_role("heading", name="3 observations match").wait_for()
    assert "never retrieved" in page.locator("table.obs-table").inner_text()
    assert "ships on Fridays" not in page.locator("table.obs-table").inner_text()
    page.screenshot(path=str(artifacts_dir / "unused-bulk-confirm.png"), full_page=True)
    page.get_by_role("button", name="Delete: 3 observations").click()
    page.get_by_text("Bulk deletion of 3 observations started").wait_for()
    assert all(store.observations.get(ObjectId(o.id)).deleted for o in stale)

    bulk_job = store.jobs.collection.find_one({"kind": "bulk", "agent_id": "support-bot"})
    page.goto(f"{live_server.url}/jobs/{bulk_job['_id']}/")
    page.locator("#bulk-undo-button").wait_for()
    page.screenshot(path=str(artifacts_dir / "bulk-undo-button.png"), full_page=True)
    page.click("#bulk-undo-button")
    page.get_by_text("Undo started").wait_for()
    page.screenshot(path=str(artifacts_dir / "bulk-undone.png"), full_page=True)
    live = store.observations.collection.find(
        {"scope_id": ObjectId(group.id), "deleted_at": None}
    ).limit(20)
    assert sorted(d["content"] for d in live) == sorted([o.content for o in stale] + [used.content])
    page.goto(f"{live_server.url}/jobs/{bulk_job['_id']}/")
    assert "Undone by" in page.locator("#bulk-undo").inner_text()
    assert page.locator("#bulk-undo-button").count() == 0
