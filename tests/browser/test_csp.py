"""The UI works under its Content-Security-Policy: htmx swaps, no blocked script or style."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def rows_become(page: Any, selector: str, count: int, within: float = 10.0) -> int:
    """Poll from Python: `wait_for_function` would evaluate a string, which the CSP refuses."""
    deadline = time.monotonic() + within
    seen = page.locator(selector).count()
    while seen != count and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = page.locator(selector).count()
    return seen


def test_pages_and_htmx_work_with_the_csp_on(live_server, browser, store, make_user, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    ScopeFactory.create(store=store, agent_id="support-bot", user_id="u-gene")
    ScopeFactory.create(store=store, agent_id="support-bot", group=True, group_id="eden")
    make_user("operator", username="olivia")
    context = browser.new_context(viewport={"width": 1366, "height": 800})  # CSP enforced
    context.set_default_timeout(10_000)
    page = context.new_page()
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    try:
        _sign_in(page, live_server, "olivia")
        page.wait_for_url(f"{live_server.url}/")
        response = page.goto(f"{live_server.url}/scopes/")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert rows_become(page, "#scope-table tbody tr", 2) == 2
        page.select_option("#id_type", "individual")  # htmx swaps the table in place
        page.wait_for_url(re.compile(r"type=individual"))
        assert rows_become(page, "#scope-table tbody tr", 1) == 1
        page.goto(f"{live_server.url}/prompts/")
        page.wait_for_load_state("networkidle")
        assert violations == []
    finally:
        context.close()
