"""The chat playground in Chromium: an admin turns the memory tool on for an agent on the
Agents page, then talks to it in the playground (the offline provider answers), sees each
turn's memory, retrieval decision, tokens and tool call, and opens a turn's context call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_journeys import _sign_in
from tests.factories import ObservationFactory, ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_an_admin_turns_the_tool_on_and_talks_in_the_playground(
    live_server, page, store, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = None
    settings.MEMORY_CHAT_UPSTREAM_API_KEY = None
    settings.OPENAI_BASE_URL = None
    settings.OPENAI_API_KEY = None
    gene = ScopeFactory.create(
        store=store, agent_id="play-bot", user_id="u-gene", display_name="Gene"
    )
    ObservationFactory.create(store=store, scope=gene, content="Gene writes firmware in Rust.")
    ObservationFactory.create(store=store, scope=gene, content="Gene prefers short answers.")
    team = ScopeFactory.create(
        store=store, agent_id="play-bot", group=True, group_id="g-eden", display_name="Eden"
    )
    ObservationFactory.create(store=store, scope=team, content="The Eden team deploys on Fridays.")
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/agents/")
    row = page.locator('tr[data-agent-id="play-bot"]')
    row.locator("select[name=memory_tool]").select_option("search_memory")
    row.locator("button[type=submit]").click()
    page.wait_for_selector('tr[data-agent-id="play-bot"] [role=status]')
    page.screenshot(path=str(artifacts_dir / "agents-memory-tool.png"), full_page=True)

    page.click("nav.mainnav >> text=Chat")
    page.wait_for_url(f"{live_server.url}/playground/")
    assert page.locator("#playground-offline").is_visible()
    page.fill("#id_user", "u-gene")
    page.fill("#id_user_name", "Gene")
    page.fill("#id_groups", "g-eden=Eden Team")
    page.fill("#id_message", "What did I tell you about Rust firmware?")
    page.click("#send-button")
    page.wait_for_selector("section.turn")
    turn = page.locator("section.turn").first
    assert turn.locator(".decision").get_attribute("data-triggered") == "true"
    assert "round 1" in turn.locator(".tool-call").inner_text()
    assert page.locator(".chat-assistant").first.inner_text().count("Offline provider") == 1

    page.fill("#id_message", "And when does my team deploy?")
    page.click("#send-button")
    page.wait_for_function("document.querySelectorAll('section.turn').length === 2")
    assert page.locator(".chat-message").count() == 4
    assert page.locator("#id_user").input_value() == "u-gene"  # the form keeps who is talking
    assert page.locator("#id_message").input_value() == ""
    page.locator("section.turn").first.locator("details summary").click()
    assert "Fridays" in page.locator("section.turn").first.locator("pre.context-xml").inner_text()
    page.screenshot(path=str(artifacts_dir / "playground.png"), full_page=True)

    page.locator("section.turn").last.locator("a.context-call-link").click()
    page.wait_for_url("**/context-calls/**")
    assert "Rust" in page.content()
