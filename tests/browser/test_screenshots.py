"""The README's screenshots, taken from exactly what `make run` seeds (`seed_demo`).

`make screenshots` runs this file with MEMORY_SCREENSHOTS_DIR=docs, so the pictures in
the README are regenerated from the demo data and stay true; in the normal suite they
go to test-artifacts/browser/readme/ and the test checks the pages show the demo.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from memory_admin.demo.seed import AGENTS, seed_demo
from memory_admin.ui import dashboard
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


@pytest.fixture
def shots(artifacts_dir: Path) -> Path:
    target = os.environ.get("MEMORY_SCREENSHOTS_DIR")
    folder = Path(target) if target else artifacts_dir / "readme"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(page: Any, folder: Path, name: str, *, full: bool = True) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), name
    page.screenshot(path=str(folder / f"ui-{name}.png"), full_page=full)


def test_readme_screenshots_show_the_seeded_demo(
    live_server, page, store, make_user, settings, shots: Path, monkeypatch
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    # The suite reaches its store by URI; `make run` starts the embedded one: show that.
    monkeypatch.setattr(dashboard, "store_mode", lambda: "embedded")
    seed_demo(store=store)
    make_user("admin", username="admin")  # the demo login's name
    agent = AGENTS[0]
    gene = store.scopes.find_by_identity(
        agent_id=agent, scope_type="individual", user_id="user-gene", group_id=None, name=None
    )
    assert gene is not None
    _sign_in(page, live_server, "admin")
    page.wait_for_url(f"{live_server.url}/")

    assert page.locator(f'tr[data-agent-id="{agent}"]').is_visible()
    assert "support-bot" not in page.content()
    assert not re.search(r"observations \(0\)", page.content())  # the chart counts the seed
    _shot(page, shots, "dashboard")

    page.goto(f"{live_server.url}/scopes/?agent={agent}")
    _shot(page, shots, "scopes")

    page.goto(f"{live_server.url}/scopes/{gene.id}/")
    page.click("#consolidate-button")
    page.locator('#job-status[data-status="succeeded"]').wait_for(timeout=15_000)
    page.wait_for_function("document.querySelector('#head-pending').textContent === '0'")
    _shot(page, shots, "scope-detail")

    page.goto(f"{live_server.url}/scopes/{gene.id}/consolidation/compare/?a=2&b=3")
    _shot(page, shots, "consolidation-diff")

    # Every page has something real on a fresh install: recent sessions to dry-run on,
    # a saved prompt check, sessions whose messages the observations cite, chat calls.
    page.goto(f"{live_server.url}/prompts/{agent}/extraction/")
    assert page.locator("#id_session option[value^='sess-']").count() > 0
    assert "Platform preferences land in the user" in page.content()
    page.goto(f"{live_server.url}/agents/{agent}/sessions/chat-user-gene-1/")
    assert page.locator('[data-memory="injected"]').count() == 1
    assert page.locator("#session-messages tr[data-message-id]").count() == 2
    _shot(page, shots, "chat-session")
    page.goto(f"{live_server.url}/scopes/{gene.id}/")
    session_link = page.locator("td.prov a[href*='/sessions/sess-']").first
    session_link.click()
    page.wait_for_url("**/sessions/sess-*/")
    assert page.locator("#session-messages tr[data-message-id]").count() >= 2
    page.goto(f"{live_server.url}/prompts/{agent}/extraction/")
    page.fill("#id_conversation", "user: I moved to Lisbon last month.\nassistant: Noted!")
    page.click("#dry-run-button")
    page.locator("#dry-run h3").first.wait_for()
    _shot(page, shots, "prompt-dry-run")

    page.goto(
        f"{live_server.url}/search/?agent={agent}&user=user-gene&groups=eden-team"
        "&message=what+did+i+tell+you+about+invoices"
    )
    page.locator("#search-result").wait_for()
    _shot(page, shots, "search-inspector")

    page.goto(f"{live_server.url}/jobs/")
    for kind in ("rebuild", "chat_ingest", "formation"):
        assert page.locator(f"#job-table th a:text-is('{kind}')").count() > 0, kind
    _shot(page, shots, "jobs")

    page.goto(f"{live_server.url}/users/?q=gene")
    page.locator('#find-results tr[data-user-id="user-gene"]').wait_for()
    page.goto(f"{live_server.url}/users/?agent={agent}&user=user-gene")
    _shot(page, shots, "users")

    page.goto(f"{live_server.url}/usage/?agent={agent}&days=7")
    assert page.locator('#by-prompt tr[data-prompt="consolidation v0"]').count() == 1
    _shot(page, shots, "usage")

    page.goto(f"{live_server.url}/people/")
    _shot(page, shots, "people")

    # The review queue of a fresh install is not empty: the demo's held items wait there.
    page.goto(f"{live_server.url}/review/?agent={agent}")
    assert page.locator("li.review-item").count() == 2
    assert page.locator('mark[data-flag="pii:phone"]').count() == 1
