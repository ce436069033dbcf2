"""An admin's journey through People and API keys in a real browser: create an operator,
create a key bound to one agent, use it (that agent only), revoke it (401 from then on)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import authenticate

from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_admin_creates_an_operator_and_a_bound_key_then_revokes_it(
    live_server, page, store, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    ScopeFactory.create(store=store, agent_id="support-bot")
    ScopeFactory.create(store=store, agent_id="sales-bot")
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")

    page.click("nav.mainnav >> text=People")
    page.wait_for_url(re.compile(r"/people/$"))
    page.fill("#id_username", "otto")
    page.select_option("#id_role", "operator")
    page.click("#person-form button[type=submit]")
    password = page.locator("#created-password").inner_text().strip()
    assert authenticate(username="otto", password=password) is not None
    row = page.locator('tr[data-username="otto"]')
    assert row.locator("select").input_value() == "operator"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artifacts_dir / "people.png"), full_page=True)

    page.click("#tab-keys")
    page.wait_for_url(re.compile(r"/keys/$"))
    page.fill("#id_key_name", "support-bot prod")
    assert page.locator("#id_reach_agents").is_checked()  # all agents is a choice of its own
    page.check('input[name="agents"][value="support-bot"]')
    page.uncheck('input[name="permissions"][value="forget"]')
    page.click("#create-key-button")
    raw = page.locator("#created-key-value").inner_text().strip()
    assert raw.startswith("mk_")
    page.click('[data-copy-from="created-key-value"]')
    page.locator('[data-copy-from="created-key-value"]', has_text="Copied").wait_for()
    page.screenshot(path=str(artifacts_dir / "api_keys_created.png"), full_page=True)

    headers = {"Authorization": f"Bearer {raw}"}
    api = f"{live_server.url}/api/v1/agents"
    assert page.request.get(f"{api}/support-bot/scopes", headers=headers).status == 200
    assert page.request.get(f"{api}/sales-bot/scopes", headers=headers).status == 404
    forget = page.request.delete(f"{api}/support-bot/users/u1", headers=headers)
    assert forget.status == 403 and forget.json()["error"]["code"] == "permission_denied"

    page.goto(f"{live_server.url}/keys/")
    row = page.locator('tr[data-key-name="support-bot prod"]')
    assert "support-bot" in row.inner_text() and "sales-bot" not in row.inner_text()
    assert raw not in page.content()  # shown once only
    row.locator("text=Revoke…").click()
    page.click("button.btn-danger")
    page.get_by_text("Revoked support-bot prod").wait_for()
    assert "revoked" in page.locator('tr[data-key-name="support-bot prod"]').inner_text()
    assert page.request.get(f"{api}/support-bot/scopes", headers=headers).status == 401

    page.goto(f"{live_server.url}/audit/?action=apikey.revoke")
    assert "ui:ada" in page.locator("#audit-table").inner_text()
