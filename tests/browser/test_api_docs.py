"""The API docs at /api/v1/docs render in Chromium with the CSP on, from local assets only."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def _count_becomes_at_least(page: Any, selector: str, least: int, within: float = 15.0) -> int:
    """Poll from Python: `wait_for_function` would evaluate a string, which the CSP refuses."""
    deadline = time.monotonic() + within
    seen = page.locator(selector).count()
    while seen < least and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = page.locator(selector).count()
    return seen


def test_api_docs_list_the_operations(live_server, browser, store, artifacts_dir: Path):
    context = browser.new_context(viewport={"width": 1366, "height": 900})  # CSP enforced
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda message: problems.append(message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    hosts: set[str] = set()
    page.on("request", lambda request: hosts.add(urlparse(request.url).netloc))
    try:
        response = page.goto(f"{live_server.url}/api/v1/docs")
        assert response.status == 200
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert _count_becomes_at_least(page, ".opblock", 20) >= 20
        page.wait_for_load_state("networkidle")
        summaries = page.locator(".opblock-summary-path").all_inner_texts()
        assert any(path.endswith("/scopes/{scope_id}") for path in summaries)
        assert any("/sessions/{session_id}/messages" in path for path in summaries)
        assert page.locator(".errors-wrapper").count() == 0  # no "Parser error" box
        assert "duplicated mapping key" not in page.content()
        page.screenshot(path=str(artifacts_dir / "api-docs.png"), full_page=False)
        assert hosts <= {urlparse(live_server.url).netloc}, hosts  # no CDN
        assert problems == []
    finally:
        context.close()
