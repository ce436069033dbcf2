"""An operator sets a group scope's item limits and consolidation model in the settings
form's own block, and an admin sets the agent's defaults by scope type; each field says the
value in effect and where it comes from (screenshots limits_scope.png, limits_agent.png)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bson import ObjectId

from streams.core.documents import utcnow
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_set_limits_and_models_on_a_scope_and_its_agent(
    live_server, page, store, make_user, artifacts_dir: Path
):
    store.agents.ensure("support-bot", now=utcnow())
    scope = ScopeFactory.create(store=store, agent_id="support-bot", group=True)
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/agents/support-bot/limits/")
    assert "In effect: 30 (code default)." in page.locator('[data-kind="group"]').inner_text()
    page.fill("#id_group__item_words", "40")
    page.select_option("#id_extraction_model", "gpt-4.1-mini")
    page.click("#save-limits")
    page.locator("#limits-saved").wait_for()
    group_row = page.locator('[data-kind="group"]').inner_text()
    assert "In effect: 40 (agent default)." in group_row
    page.screenshot(path=str(artifacts_dir / "limits_agent.png"), full_page=True)

    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    block = page.locator("#limits-fields")
    assert "In effect: 40 (agent default)." in block.inner_text()
    page.fill("#id_item_cap", "3")
    page.select_option("#id_consolidation_model", "gpt-4.1")
    page.click("button:has-text('Save settings')")
    page.get_by_text("Settings saved.").wait_for()
    text = page.locator("#limits-fields").inner_text()
    assert "In effect: 3 (scope override)." in text
    assert "In effect: gpt-4.1 (scope override)." in text
    fresh = store.scopes.get(ObjectId(scope.id))
    assert (fresh.item_cap, fresh.consolidation_model) == (3, "gpt-4.1")
    page.locator("#limits-fields").scroll_into_view_if_needed()
    page.locator("#limits-fields").screenshot(path=str(artifacts_dir / "limits_scope.png"))
