"""A viewer in Chromium (issue 40): picks "All agents" on the Scopes page and sees two
agents' scopes, each row naming its agent; the agent link narrows the list to one."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_viewer_sees_every_agents_scopes_named(
    live_server, page, store, make_user, artifacts_dir: Path
):
    for agent, group in (("support-bot", "eden"), ("sales-bot", "acme")):
        scope, _ = scope_get_or_create(
            store=store, key=ScopeKey.group(agent, group), display_name=f"{group.title()} team"
        )
        observation_add(store=store, scope=scope, content=f"The {group} team ships on Fridays.")
    make_user("viewer", username="vera")
    _sign_in(page, live_server, "vera")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/scopes/")
    page.select_option("#id_agent", "all")
    page.click("button:has-text('Apply')")
    page.locator("td.agent-name").nth(1).wait_for()
    assert sorted(page.locator("td.agent-name").all_inner_texts()) == ["sales-bot", "support-bot"]
    page.screenshot(path=str(artifacts_dir / "scopes-all-agents.png"), full_page=True)

    page.locator("td.agent-name a", has_text="sales-bot").click()
    page.wait_for_url("**agent=sales-bot**")
    assert "Acme team" in page.content() and "Eden team" not in page.content()
