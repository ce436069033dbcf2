"""An operator in Chromium (issue 42, item 6): the scope page's Ranking block shows each
switch with its measured effect; turning recency on is saved and shown as in use."""

from __future__ import annotations

from pathlib import Path

import pytest
from bson import ObjectId

from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_ranking_block_on_the_scope_page(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group("support-bot", "g-eden"), display_name="Eden team"
    )
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{group.id}/#ranking")
    block = page.locator("#ranking-form")
    block.wait_for()
    assert block.locator("[data-effect]").count() == 3
    assert "recall@5" in block.inner_text()
    page.select_option("#id_ranking_recency", "on")
    block.locator("button:has-text('Save ranking')").click()
    page.get_by_text("Ranking settings saved.").wait_for()
    assert store.scopes.get(ObjectId(group.id)).ranking == {"recency": True}
    recency = page.locator("#ranking-form [data-switch=recency]")
    assert recency.locator("[data-in-use]").inner_text() == "on"
    page.locator("#settings").screenshot(path=str(artifacts_dir / "ranking-settings.png"))
