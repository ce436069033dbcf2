"""Real-browser journeys: what an operator sees, including the screenshots we review."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memory_admin.ui import dashboard
from tests.factories import ObservationFactory, ScopeFactory
from tests.services import needs_chromium
from tests.ui.people import PASSWORD

pytestmark = [pytest.mark.browser, needs_chromium]


def _sign_in(page: Any, live_server: Any, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_operator_signs_in_and_sees_agent_counts(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    support = ScopeFactory.create(store=store, agent_id="support-bot")
    ScopeFactory.create(store=store, agent_id="support-bot", group=True)
    for _ in range(3):
        ObservationFactory.create(store=store, scope=support)
    ScopeFactory.create(store=store, agent_id="onboarding-assistant")
    make_user("operator", username="olivia")

    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url  # anonymous → the login page
    page.screenshot(path=str(artifacts_dir / "login.png"), full_page=True)

    page.fill("#id_username", "olivia")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")

    assert page.locator("h1").inner_text() == "Dashboard"
    row = page.locator('tr[data-agent-id="support-bot"]')
    assert row.locator('[data-col="scopes"]').inner_text().strip() == "2"
    assert row.locator('[data-col="observations"]').inner_text().strip() == "3"
    assert row.locator('[data-col="pending"]').inner_text().strip() == "3"
    assert page.locator('tr[data-agent-id="onboarding-assistant"]').is_visible()
    assert page.locator(".who-name").inner_text() == "olivia"
    assert page.locator(".role").inner_text().lower() == "operator"
    assert page.get_by_text("LLM: offline (rule-based)").is_visible()
    # Fits a laptop screen: nothing wider than the viewport.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artifacts_dir / "dashboard.png"), full_page=True)

    page.click("text=Sign out")
    page.wait_for_url(re.compile(r"/login/"))
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url


def test_next_page_swaps_the_table_in_place_and_updates_the_url(
    live_server, page, store, make_user, monkeypatch
):
    monkeypatch.setattr(dashboard, "PAGE_SIZE", 2)
    for agent_id in ("agent-a", "agent-b", "agent-c"):
        ScopeFactory.create(store=store, agent_id=agent_id)
    make_user("viewer", username="victor")
    _sign_in(page, live_server, "victor")
    page.wait_for_url(f"{live_server.url}/")
    page.evaluate("window.__notReloaded = true")

    page.click("text=Next page")
    page.wait_for_url(re.compile(r"\?after=agent-b$"))
    page.locator('tr[data-agent-id="agent-c"]').wait_for()

    assert page.evaluate("window.__notReloaded === true")  # htmx swapped, no full load
    assert page.locator("#agent-table").count() == 1
    assert page.locator('tr[data-agent-id="agent-a"]').count() == 0

    page.go_back()
    page.locator('tr[data-agent-id="agent-a"]').wait_for()
    assert page.locator("h1").inner_text() == "Dashboard"


def test_user_without_a_role_sees_the_403_page(live_server, page, make_user, artifacts_dir: Path):
    make_user(None, username="newcomer")
    _sign_in(page, live_server, "newcomer")
    page.wait_for_url(f"{live_server.url}/")

    assert page.get_by_text("You don't have access to this page").is_visible()
    assert page.locator(".role").inner_text().lower() == "no role"
    page.screenshot(path=str(artifacts_dir / "forbidden.png"), full_page=True)
