"""An operator sees what "Consolidate now" would cost on a scope of 600 pending
observations, runs it, and sees it took several chunks into one version (screenshot
consolidation_chunks.png, before and after)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bson import ObjectId

from benchmarks.consolidation_chunks import pending_seed
from streams.memory.scopes import scope_get
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_the_estimate_before_consolidate_now_and_the_chunks_after(
    live_server, page, store, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_FIDELITY_FLOOR = 0.0  # 600 distinct notes cannot all fit 500 words
    scope = ScopeFactory.create(store=store, agent_id="support-bot", group=True)
    store.scopes.update_fields(ObjectId(scope.id), {"consolidation_threshold": 10_000})
    pending_seed(store=store, scope=scope_get(store=store, scope_id=scope.id), count=600)
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    page.locator("#consolidation-estimate[data-chunks]").wait_for()  # loaded after the page
    estimate = page.locator("#consolidation-estimate").inner_text()
    assert "600 to fold in 3 chunks" in estimate and "offline-rules" in estimate
    page.screenshot(path=str(artifacts_dir / "consolidation_chunks_before.png"))
    page.click("#consolidate-button")
    page.locator('#job-status[data-status="succeeded"]').wait_for(timeout=120_000)
    status = page.locator("#job-status").inner_text()
    assert "600 observations absorbed in 3 chunks" in status
    page.screenshot(path=str(artifacts_dir / "consolidation_chunks_after.png"))
    after = scope_get(store=store, scope_id=scope.id)
    assert (after.pending_count, after.consolidation_version) == (0, 1)
