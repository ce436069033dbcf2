"""Real-browser journeys through the scope, prompt and job pages, with the screenshots we
review (test-artifacts/browser/)."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import run_consolidation
from streams.core.documents import Job
from streams.memory.observations import observation_list
from streams.prompts import prompt_save
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium
from tests.ui.helpers import scope_with_history

pytestmark = [pytest.mark.browser, needs_chromium]

CONSOLIDATION_V1 = (
    "You maintain the memory of {scope}. Fold the new observations into it.\n"
    "Current memory:\n{consolidation}\n\nNew observations:\n{observations}\n\n"
    "At most {max_words} words of prose."
)


@pytest.fixture
def demo_world(store, settings) -> dict[str, Any]:
    settings.MEMORY_LLM_PROVIDER = "offline"
    gene = scope_with_history(store)
    ScopeFactory.create(
        store=store, agent_id="support-bot", group=True, group_id="eden", display_name="Eden Team"
    )
    ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-ada", display_name="Ada Lovelace"
    )
    ScopeFactory.create(store=store, agent_id="support-bot", shard=True, name="product-feedback")
    return {"gene": gene}


def _no_horizontal_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_browse_filter_open_a_scope_and_edit_an_observation(
    live_server, page, store, make_user, demo_world, artifacts_dir: Path
):
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.click("nav.mainnav >> text=Scopes")
    page.wait_for_url(re.compile(r"/scopes/$"))
    assert page.locator("#scope-table tbody tr").count() == 4
    page.evaluate("window.__notReloaded = true")

    page.select_option("#id_type", "individual")
    page.wait_for_function("location.search.includes('type=individual')")
    page.wait_for_function("document.querySelectorAll('#scope-table tbody tr').length === 2")
    page.fill("#id_q", "gene")
    page.wait_for_function("location.search.includes('q=gene')")
    page.wait_for_function("document.querySelectorAll('#scope-table tbody tr').length === 1")
    assert page.evaluate("window.__notReloaded === true")  # filters swap the table in place
    assert _no_horizontal_scroll(page)
    page.screenshot(path=str(artifacts_dir / "scopes.png"), full_page=True)

    page.click("#scope-table >> text=Gene")
    page.wait_for_url(re.compile(r"/scopes/[0-9a-f]{24}/$"))
    assert "Gene likes green tea" in page.locator("#consolidation-panel").inner_text()
    assert _no_horizontal_scroll(page)
    page.screenshot(path=str(artifacts_dir / "scope_detail.png"), full_page=True)

    row = page.locator("#observation-log tr", has_text="Gene moved to Porto.")
    observation_id = row.get_attribute("data-observation-id")
    row.locator("text=Edit").click()
    editor = page.locator(f"#obs-{observation_id} textarea")
    editor.wait_for()
    editor.fill("Gene moved to Braga in March.")
    page.screenshot(path=str(artifacts_dir / "observation_edit.png"), full_page=False)
    page.locator(f"#obs-{observation_id} >> text=Save").click()
    page.locator(f"#obs-{observation_id}.just-saved").wait_for()
    assert "Gene moved to Braga in March." in page.locator(f"#obs-{observation_id}").inner_text()
    assert store.observations.get(ObjectId(observation_id)).content == (
        "Gene moved to Braga in March."
    )
    page.reload()
    assert "Gene moved to Braga in March." in page.locator("#observation-log").inner_text()


def test_consolidate_now_shows_the_job_live_then_the_new_version_and_its_diff(
    live_server, page, store, make_user, demo_world, artifacts_dir: Path, monkeypatch
):
    """A worker picks the job up a moment later (as with a broker): the page shows it
    queued, then done, and refreshes the consolidation, all without a reload."""

    def enqueue_later(jobs: list[Job]) -> None:
        for job in jobs:
            threading.Timer(1.5, run_consolidation.delay, args=[job.id]).start()

    monkeypatch.setattr("streams.actions.base._dispatcher", enqueue_later)
    gene = demo_world["gene"]
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{gene.id}/")
    page.evaluate("window.__notReloaded = true")

    page.click("text=Consolidate now")
    page.locator('#job-status[data-status="queued"]').wait_for()
    page.screenshot(path=str(artifacts_dir / "consolidation_queued.png"), full_page=False)
    page.locator('#job-status[data-status="succeeded"]').wait_for(timeout=15_000)
    page.locator("#consolidation-panel .version", has_text="v3").wait_for()
    assert page.evaluate("window.__notReloaded === true")
    assert "Gene moved to Porto" in page.locator("#consolidation-panel").inner_text()
    page.locator("#pending-panel >> text=Nothing waits for consolidation.").wait_for()
    page.locator("#observation-log .pill-consolidated").first.wait_for()
    assert page.locator("#observation-log button", has_text="Mark private").count() == 3
    page.screenshot(path=str(artifacts_dir / "consolidation_done.png"), full_page=True)

    page.click("#job-status >> text=See the diff")
    page.wait_for_url(re.compile(r"/consolidation/compare/\?a=2&b=3"))
    assert page.locator("#diff ins").count() > 0
    assert _no_horizontal_scroll(page)
    page.screenshot(path=str(artifacts_dir / "consolidation_diff.png"), full_page=True)


def test_edit_a_consolidation_prompt_dry_run_then_revert(
    live_server, page, store, make_user, demo_world, artifacts_dir: Path
):
    gene = demo_world["gene"]
    prompt_save(
        store=store,
        agent_id="support-bot",
        kind="consolidation",
        text=CONSOLIDATION_V1,
        author="ui:seed",
        scope_id=gene.id,
    )
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{gene.id}/")
    page.click('a[href*="/prompts/support-bot/consolidation/?scope="]')
    page.wait_for_url(re.compile(r"/prompts/support-bot/consolidation/\?scope="))

    page.fill("#id_text", CONSOLIDATION_V1 + "\nWrite in the second person.")
    page.click("#dry-run-form >> text=Dry run")
    page.locator("#dry-run >> text=With your edit").wait_for()
    assert "nothing saved" in page.locator("#dry-run").inner_text()
    assert store.scopes.get(ObjectId(gene.id)).consolidation_version == 2
    assert _no_horizontal_scroll(page)
    page.screenshot(path=str(artifacts_dir / "prompt_dry_run.png"), full_page=True)

    page.click("text=Save as a new version")
    page.get_by_text("Saved the consolidation prompt as version 2.").wait_for()
    page.locator('tr[data-version="1"] >> text=Revert').click()
    page.get_by_text("Reverted the consolidation prompt to version 1 (saved as 3).").wait_for()
    assert page.input_value("#id_text") == CONSOLIDATION_V1
    page.locator('tr[data-version="2"] >> text=Diff').click()
    page.wait_for_url(re.compile(r"a=1&b=2"))
    assert page.locator("#diff ins").inner_text().strip() == "Write in the second person."
    assert page.locator("#diff del").count() == 0
    page.screenshot(path=str(artifacts_dir / "prompt_revert.png"), full_page=True)


def test_a_viewer_sees_no_edit_controls_and_a_forged_post_is_refused(
    live_server, page, store, make_user, demo_world, artifacts_dir: Path
):
    gene = demo_world["gene"]
    make_user("viewer", username="victor")
    _sign_in(page, live_server, "victor")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/scopes/{gene.id}/")
    assert page.locator("text=Consolidate now").count() == 0
    assert page.locator("text=Edit by hand").count() == 0
    assert page.locator("#observation-log >> text=Mark private").count() == 0
    page.screenshot(path=str(artifacts_dir / "viewer_scope.png"), full_page=True)

    observation = observation_list(store=store, scope=gene, limit=1).items[0]
    status = page.evaluate(
        """async (url) => {
            const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const body = new URLSearchParams({content: 'forged', csrfmiddlewaretoken: token});
            const response = await fetch(url, {method: 'POST', body});
            return response.status;
        }""",
        f"{live_server.url}/observations/{observation.id}/edit/",
    )
    assert status == 403
    assert store.observations.get(ObjectId(observation.id)).content == observation.content
    page.goto(f"{live_server.url}/observations/{observation.id}/edit/")
    assert page.get_by_text("You don't have access to this page").is_visible()
    page.screenshot(path=str(artifacts_dir / "viewer_forbidden.png"), full_page=False)


def test_jobs_page_retries_a_failed_job(
    live_server, page, store, make_user, demo_world, artifacts_dir: Path
):
    from streams.core.documents import utcnow
    from streams.jobs import job_create

    gene = demo_world["gene"]
    job = job_create(store=store, kind="consolidation", agent_id="support-bot", scope_id=gene.id)
    store.jobs.finish(
        job.id_oid, status="failed", now=utcnow(), error="LLMError: upstream 502", llm_calls=1
    )
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.screenshot(path=str(artifacts_dir / "dashboard_full.png"), full_page=True)
    page.goto(f"{live_server.url}/jobs/?status=failed")
    assert "LLMError: upstream 502" in page.locator("#job-table").inner_text()
    page.screenshot(path=str(artifacts_dir / "jobs.png"), full_page=True)
    page.locator(f'tr[data-job-id="{job.id}"] >> text=Retry').click()
    page.get_by_text("The consolidation job was queued again.").wait_for()
    assert store.jobs.get(job.id_oid).status in ("queued", "running", "succeeded")


def test_search_inspector_shows_the_decision_the_ranking_and_the_context(
    live_server, page, store, make_user, demo_world, artifacts_dir: Path
):
    gene = demo_world["gene"]
    make_user("viewer", username="victor")
    _sign_in(page, live_server, "victor")
    page.wait_for_url(f"{live_server.url}/")
    page.click("nav.mainnav >> text=Search")
    page.wait_for_url(re.compile(r"/search/$"))
    page.fill("#id_user", gene.user_id or "")
    page.fill("#id_user_name", "Gene")
    page.fill("#id_groups", "eden=Eden Team")
    page.fill("#id_message", "What did I tell you about Rust?")
    page.click('button:has-text("Inspect")')
    page.locator('.decision[data-triggered="true"]').wait_for()
    page.wait_for_function("location.search.includes('message=')")  # a shareable URL
    assert "Gene uses Rust." in page.locator("#search-result table").inner_text()
    why = page.locator("#search-result td.explain").first.inner_text()
    assert "rust" in why and "terms #" in why and "dates #" in why
    xml = page.locator("#context-xml").inner_text()
    assert xml.startswith("<MemoryContext>") and '<UserMemory user="Gene">' in xml
    assert _no_horizontal_scroll(page)
    page.screenshot(path=str(artifacts_dir / "search_inspector.png"), full_page=True)
