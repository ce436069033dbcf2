"""Real-browser journeys through shard guidance and prompt checks, with the screenshots we
review (test-artifacts/browser/guidance_*.png, checks_*.png)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from streams.memory.scopes import ScopeKey, scope_create, scope_get
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]

BUGS = "Crashes and bugs users ran into, with the button or screen named."
PRICING = "Pricing questions and invoices."
CRASH = "user: The export button crashes every time on Safari.\nassistant: Sorry about that!"


@pytest.fixture
def bugs_shard(store, settings) -> Any:
    settings.MEMORY_LLM_PROVIDER = "offline"
    return scope_create(
        store=store,
        key=ScopeKey.collective("support-bot", "bugs"),
        extraction_prompt=BUGS,
        author="api:seed",
    )


def _open_guidance_editor(page: Any, live_server: Any, shard: Any) -> None:
    page.goto(f"{live_server.url}/scopes/{shard.id}/")
    row = page.locator('tr.prompt-part[data-kind="extraction"][data-role="guidance"]')
    assert "scope guidance v1" in row.inner_text()
    row.locator("a").click()
    page.wait_for_url(re.compile(r"/prompts/support-bot/extraction/\?scope="))
    assert "Guidance, not a template" in page.locator("#level-help").inner_text()


def _dry_run(page: Any, draft: str) -> None:
    page.fill("#id_text", draft)
    page.fill("#id_conversation", CRASH)
    page.click("#dry-run-button")
    page.locator("#dry-run .routing-table").wait_for()


def test_shard_guidance_edit_dry_run_save_diff_against_v0_and_revert(
    live_server, page, store, make_user, bugs_shard, artifacts_dir: Path
):
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.screenshot(path=str(artifacts_dir / "guidance_scope_page.png"), full_page=False)
    _open_guidance_editor(page, live_server, bugs_shard)

    _dry_run(page, PRICING)
    row = page.locator('#dry-run tr[data-scope="shard:bugs"]')
    assert (row.get_attribute("data-current"), row.get_attribute("data-edited")) == ("1", "0")
    assert "changed" in row.inner_text()
    assert page.locator("#offline-note").is_visible()
    assert scope_get(store=store, scope_id=bugs_shard.id).extraction_prompt == BUGS
    page.screenshot(path=str(artifacts_dir / "guidance_dry_run.png"), full_page=True)

    page.click("text=Save as a new version")
    page.get_by_text("Saved the extraction guidance as version 2.").wait_for()
    assert scope_get(store=store, scope_id=bugs_shard.id).extraction_prompt == PRICING
    page.locator('tr[data-version="2"] a.diff-v0').click()
    page.wait_for_url(re.compile(r"a=0&b=2"))
    assert "v0 (code default)" in page.locator("#diff h2").inner_text()
    assert page.locator("#diff ins").inner_text().strip() == PRICING
    page.screenshot(path=str(artifacts_dir / "guidance_diff_v0.png"), full_page=True)

    page.locator('tr[data-version="1"] >> text=Revert').click()
    page.get_by_text("Reverted the extraction prompt to version 1 (saved as 3).").wait_for()
    assert page.input_value("#id_text") == BUGS
    fresh = scope_get(store=store, scope_id=bugs_shard.id)
    assert (fresh.extraction_prompt, fresh.guidance_version) == (BUGS, 3)
    page.goto(f"{live_server.url}/scopes/{bugs_shard.id}/")
    row = page.locator('tr.prompt-part[data-kind="extraction"][data-role="guidance"]')
    assert "scope guidance v3" in row.inner_text()
    page.screenshot(path=str(artifacts_dir / "guidance_reverted_scope_page.png"), full_page=True)


def test_save_a_check_and_watch_a_draft_fail_it(
    live_server, page, store, make_user, bugs_shard, artifacts_dir: Path
):
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    _open_guidance_editor(page, live_server, bugs_shard)

    _dry_run(page, BUGS)
    page.fill("#id_check_name", "crash reports land in bugs")
    page.select_option("#id_expect_1", "lands_in")
    page.fill("#id_value_1", "shard:bugs")
    page.select_option("#id_expect_2", "contains")
    page.fill("#id_value_2", "export button")
    page.click("#save-check")
    page.get_by_text("Saved the check “crash reports land in bugs”.").wait_for()

    page.fill("#id_text", PRICING)
    page.click("#run-checks")
    row = page.locator('#checks tr[data-check="crash reports land in bugs"]')
    row.wait_for()
    assert (row.get_attribute("data-current"), row.get_attribute("data-draft")) == ("pass", "fail")
    assert "regression" in row.inner_text()
    page.screenshot(path=str(artifacts_dir / "checks_draft_fails.png"), full_page=True)

    page.click("text=Save as a new version")
    page.locator("#save-anyway").wait_for()
    assert "fails 1 check that" in page.locator(".field-error").first.inner_text()
    assert scope_get(store=store, scope_id=bugs_shard.id).extraction_prompt == BUGS
    page.screenshot(path=str(artifacts_dir / "checks_save_needs_confirmation.png"), full_page=True)
    page.click("#save-anyway")
    page.get_by_text("Saved the extraction guidance as version 2.").wait_for()
    assert scope_get(store=store, scope_id=bugs_shard.id).extraction_prompt == PRICING
