"""An admin adds a person; that person signs in with the one-time password, is sent to
choose their own before anything else, and lands on the dashboard once they have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
NEW = "otto's own passphrase 7"


def test_a_new_person_must_choose_their_own_password(
    live_server, page, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    make_user("admin", username="ada")
    page.goto(f"{live_server.url}/login/")
    assert "create_user" in page.locator(".auth-card").inner_text()
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/people/")
    page.fill("#id_username", "otto")
    page.select_option("#id_role", "operator")
    page.click("#person-form button[type=submit]")
    created = page.locator("#created-person").inner_text()
    assert "must choose their own password" in created
    one_time = page.locator("#created-password").inner_text().strip()
    page.click("form.logout button")

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "otto")
    page.fill("#id_password", one_time)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/password/$"))
    page.locator("#password-change-required").wait_for()
    page.screenshot(path=str(artifacts_dir / "password_change_required.png"), full_page=True)
    page.goto(f"{live_server.url}/scopes/")  # anything else: back to the change page
    page.wait_for_url(re.compile(r"/password/$"))

    page.fill("#id_old_password", one_time)
    page.fill("#id_new_password1", NEW)
    page.fill("#id_new_password2", NEW)
    page.click("#password-change-button")
    page.wait_for_url(f"{live_server.url}/")
    assert "Your password was changed." in page.locator(".messages").inner_text()
    page.screenshot(path=str(artifacts_dir / "password_changed.png"), full_page=True)
    page.goto(f"{live_server.url}/scopes/")
    assert page.url.endswith("/scopes/")
