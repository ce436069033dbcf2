"""Every htmx form that can fail shows its failure: 422/409 partials are swapped into place
(the htmx-config meta of base.html) and other failures raise the visible request alert
(static/js/app.js). Without the config htmx 2 drops 4xx answers and the form says nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId

from tests.browser.test_journeys import _sign_in
from tests.factories import ObservationFactory, ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


@pytest.fixture
def operator_on_a_scope(live_server, page, store, make_user, settings) -> dict[str, Any]:
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-gene", display_name="Gene"
    )
    observation = ObservationFactory.create(store=store, scope=scope, content="Gene likes tea.")
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    return {"scope": scope, "observation": observation}


def _open_inline_editor(page: Any, live_server: Any, world: dict[str, Any]) -> str:
    page.goto(f"{live_server.url}/scopes/{world['scope'].id}/")
    oid = world["observation"].id
    page.locator(f"#obs-{oid} >> text=Edit").click()
    page.locator(f"#obs-{oid} textarea").wait_for()
    return oid


def test_an_empty_inline_edit_shows_its_error_in_the_row(
    live_server, page, store, operator_on_a_scope, artifacts_dir: Path
):
    oid = _open_inline_editor(page, live_server, operator_on_a_scope)
    page.evaluate("window.__notReloaded = true")
    page.fill(f"#obs-{oid} textarea", "")
    page.locator(f"#obs-{oid} >> text=Save").click()

    error = page.locator(f"#obs-{oid} .field-error")
    error.wait_for()
    assert error.inner_text().strip()
    assert page.locator(f"#obs-{oid} textarea").is_visible()  # still editing, in place
    assert page.evaluate("window.__notReloaded === true")
    assert page.locator("#request-alert").is_hidden()
    assert store.observations.get(ObjectId(oid)).content == "Gene likes tea."
    page.screenshot(path=str(artifacts_dir / "form_inline_edit_error.png"), full_page=False)


def test_a_server_failure_on_an_inline_edit_shows_the_request_alert(
    live_server, page, operator_on_a_scope
):
    oid = _open_inline_editor(page, live_server, operator_on_a_scope)
    page.route(
        f"**/observations/{oid}/edit/",
        lambda route: (
            route.fulfill(status=500, body="boom")
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    page.fill(f"#obs-{oid} textarea", "Gene likes coffee.")
    page.locator(f"#obs-{oid} >> text=Save").click()
    alert = page.locator("#request-alert")
    alert.wait_for(state="visible")
    assert "(500)" in alert.inner_text()
    page.click("#request-alert-close")
    alert.wait_for(state="hidden")


def test_a_403_and_a_dropped_connection_show_the_request_alert(
    live_server, page, operator_on_a_scope
):
    oid = _open_inline_editor(page, live_server, operator_on_a_scope)
    edit_url = f"**/observations/{oid}/edit/"
    page.route(
        edit_url,
        lambda route: (
            route.fulfill(status=403, body="no")
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    page.locator(f"#obs-{oid} >> text=Save").click()
    page.locator("#request-alert", has_text="403").wait_for(state="visible")

    page.unroute(edit_url)
    page.route(edit_url, lambda route: route.abort())
    page.locator(f"#obs-{oid} >> text=Save").click()
    page.locator("#request-alert", has_text="could not be reached").wait_for(state="visible")


def test_a_dry_run_with_a_bad_placeholder_shows_its_error(
    live_server, page, operator_on_a_scope, artifacts_dir: Path
):
    page.goto(f"{live_server.url}/prompts/support-bot/extraction/")
    page.fill("#id_text", "Extract facts about {no_such_placeholder} from {conversation}")
    page.fill("#id_conversation", "user: I moved to Lisbon.")
    page.click("#dry-run-button")
    error = page.locator("#dry-run .form-error")
    error.wait_for()
    assert "no_such_placeholder" in error.inner_text()
    assert page.locator("#request-alert").is_hidden()
    page.screenshot(path=str(artifacts_dir / "form_dry_run_error.png"), full_page=False)


def test_a_dry_run_with_an_empty_conversation_says_to_paste_one(
    live_server, page, operator_on_a_scope
):
    page.goto(f"{live_server.url}/prompts/support-bot/extraction/")
    page.fill("#id_conversation", "")
    page.click("#dry-run-button")
    error = page.locator("#dry-run .form-error")
    error.wait_for()
    assert "paste a conversation" in error.inner_text().lower()
