"""An operator caps a group scope's log in its settings, sees what retention purged and
a contradiction waiting for review, on the scope page (screenshot lifecycle_scope.png)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.actions.sweeps import do_retention_sweep
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_cap_a_scope_and_see_retention_and_a_contradiction(
    live_server, page, store, make_user, artifacts_dir: Path
):
    scope = ScopeFactory.create(store=store, agent_id="support-bot", group=True)
    added = [
        observation_add(store=store, scope=scope, content=f"Crane {n} lifts {n * 3 + 1} tonnes")
        for n in range(12)
    ]
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text="Cranes lift tonnes.", absorbed_ids=[o.id for o in added], trigger="threshold",
        actor=None,
    )  # fmt: skip
    old = observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope.id),
        content="The team deploys on Fridays.",
    )  # fmt: skip
    new = observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope.id),
        content="The team deploys on Mondays.",
    )  # fmt: skip
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    assert "Retention: off" in page.locator("#retention").inner_text()
    page.fill("#id_max_observations", "10")
    page.click("button:has-text('Save settings')")
    page.get_by_text("Settings saved.").wait_for()
    assert do_retention_sweep(store=store) == 4
    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    retention = page.locator("#retention").inner_text()
    assert "keeps at most 10 observations (10 now)" in retention and "so far: 4" in retention
    row = page.locator(f'tr[data-observation-id="{new.id}"]')
    assert "contradicts" in row.inner_text()
    assert row.locator(f'[data-contradicts="{old.id}"]').count() == 1
    page.screenshot(path=str(artifacts_dir / "lifecycle_scope.png"), full_page=True)
