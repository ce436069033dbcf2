"""An operator in Chromium (issue 40): picks "All agents" on the Review page and sees two
agents' queues with the agent named per item, rejects one item, finds it in "Decided",
undoes it there, and sees it wait again; after the window the Undo button is gone."""

from __future__ import annotations

from pathlib import Path

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_operator_undoes_a_decision_and_sees_all_agents(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    held = {}
    for agent, text in (
        ("support-bot", "The Eden on-call phone is +44 20 7946 0958, any hour."),
        ("sales-bot", "Mail the Acme buyer at buyer@acme.example."),
    ):
        scope, _ = scope_get_or_create(
            store=store, key=ScopeKey.group(agent, "eden"), display_name=f"{agent} team"
        )
        held[agent] = observation_add(store=store, scope=scope, content=text)
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/review/")
    page.select_option("#review-agent", "all")
    page.click("button:has-text('Filter')")
    page.locator(".review-item").nth(1).wait_for()
    items = page.locator(".review-item")
    assert items.count() == 2
    named = page.locator(".review-agent").all_inner_texts()
    assert sorted(n.split()[-1] for n in named) == ["sales-bot", "support-bot"]
    page.screenshot(path=str(artifacts_dir / "review-all-agents.png"), full_page=True)

    one = page.locator(f"#review-{held['sales-bot'].id}")
    one.locator("input[name=note]").fill("not ours to keep")
    one.locator("button:has-text('Reject')").click()
    page.get_by_text("Rejected: it is kept for the audit").wait_for()
    assert store.observations.get(ObjectId(held["sales-bot"].id)).status == "rejected"

    page.select_option("#review-status", "decided")
    page.click("button:has-text('Filter')")
    row = page.locator(f"#decided-{held['sales-bot'].id}")
    row.wait_for()
    assert "rejected" in row.inner_text() and "not ours to keep" in row.inner_text()
    assert row.locator(".decided-agent").inner_text() == "sales-bot"
    page.screenshot(path=str(artifacts_dir / "review-decided.png"), full_page=True)

    row.locator("button:has-text('Undo')").click()
    page.get_by_text("Undone: it waits for review again.").wait_for()
    assert page.locator(f"#decided-{held['sales-bot'].id}").count() == 0
    assert store.observations.get(ObjectId(held["sales-bot"].id)).status == "in_review"
    page.screenshot(path=str(artifacts_dir / "review-undone.png"), full_page=True)

    # Decided again, then past the window: no Undo button, the item says "final".
    page.goto(f"{live_server.url}/review/?agent=sales-bot")
    page.locator(f"#review-{held['sales-bot'].id} button:has-text('Reject')").click()
    page.get_by_text("Rejected: it is kept for the audit").wait_for()
    settings.MEMORY_REVIEW_UNDO_SECONDS = 0
    page.goto(f"{live_server.url}/review/?agent=sales-bot&status=decided")
    final = page.locator(f"#decided-{held['sales-bot'].id}")
    final.wait_for()
    assert final.locator("button:has-text('Undo')").count() == 0
    assert "final" in final.inner_text()
