""" "What was the agent given last time?": an operator opens a user, reads the context
calls, pages back without a reload, and opens one "as it was at" with a diff against now."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memory_admin.stores import get_store
from streams.context.assemble import context_assemble
from streams.memory.consolidation import consolidation_edit
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import write_behind
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
AGENT = "support-bot"


def test_operator_replays_a_logged_call_and_sees_what_changed_since(
    live_server, page, make_user, artifacts_dir: Path, settings, monkeypatch
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_CONTEXT_LOG_DAYS = 7
    monkeypatch.setattr("memory_admin.ui.context_log.PAGE_SIZE", 2)
    store = get_store()
    scope, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    consolidation_edit(
        store=store, scope=scope, text="Gene drinks green tea.", expected_version=0, actor="t"
    )
    first = context_assemble(
        store=store, agent_id=AGENT, user_id="u-gene", message="What do I drink?", caller="api:bot"
    ).call_id
    for text in ("hello", "thanks"):
        context_assemble(store=store, agent_id=AGENT, user_id="u-gene", message=text)
    write_behind.flush()
    time.sleep(0.01)
    fresh = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(
        store=store, scope=fresh, text="Gene drinks black coffee.", expected_version=1, actor="t"
    )
    make_user("viewer", username="vera")

    _sign_in(page, live_server, "vera")
    page.goto(f"{live_server.url}/users/?agent={AGENT}&user=u-gene")
    calls = page.locator("#context-calls")
    calls.wait_for()
    assert calls.locator("tr[data-context-call-id]").count() == 2
    page.screenshot(path=str(artifacts_dir / "context-calls-user.png"), full_page=True)
    url_before = page.url
    calls.get_by_role("link", name="Older »").click()
    page.locator(f'tr[data-context-call-id="{first}"]').wait_for()
    assert page.url == url_before  # swapped in place by htmx

    page.locator(f'tr[data-context-call-id="{first}"] a.replay-link').click()
    page.locator("#replay").wait_for()
    assert "Gene drinks green tea." in page.locator("#logged-xml").inner_text()
    assert page.locator("#replay-then del").all_inner_texts() == ["green", "tea."]
    assert page.locator("#replay-now ins").all_inner_texts() == ["black", "coffee."]
    page.screenshot(path=str(artifacts_dir / "context-call-replay.png"), full_page=True)
