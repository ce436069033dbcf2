"""The search inspector in Chromium: the whole context XML is visible (nothing clipped), and
the result is a shareable URL: the pushed address, opened anew, shows the same result."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from streams.memory.consolidation import consolidation_edit
from tests.browser.test_journeys import _sign_in
from tests.factories import ObservationFactory, ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def test_the_inspector_shows_all_of_the_xml_and_its_url_reproduces_the_result(
    live_server, page, store, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    gene = ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-gene", display_name="Gene"
    )
    consolidation_edit(
        store=store,
        scope=gene,
        text=" ".join(f"Gene keeps note {n} about the Rust parser." for n in range(60)),
        expected_version=0,
        actor="ui:seed",
    )
    for n in range(30):
        ObservationFactory.create(
            store=store, scope=gene, content=f"Gene fixed parser bug {n} in the Rust parser."
        )
    make_user("viewer", username="vera")
    _sign_in(page, live_server, "vera")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/search/")
    page.fill("#id_user", "u-gene")
    page.fill("#id_message", "what did I tell you about the Rust parser?")
    page.click("form.filters button[type=submit]")
    page.wait_for_selector("#context-xml")
    page.wait_for_url("**/search/?*")
    shared = urlparse(page.url)
    params = parse_qs(shared.query)
    assert params["user"] == ["u-gene"] and "Rust parser" in params["message"][0]
    link = page.locator("#share-link").get_attribute("href")
    assert link == f"{shared.path}?{shared.query}"  # the link shown is the pushed address

    xml = page.locator("#context-xml")
    sizes = xml.evaluate("el => [el.scrollHeight, el.clientHeight, el.scrollWidth, el.clientWidth]")
    assert sizes[0] > 600  # a long context, taller than the old 32rem box
    assert sizes[0] <= sizes[1] and sizes[2] <= sizes[3], sizes  # nothing hidden in the box
    page.screenshot(path=str(artifacts_dir / "search-inspector.png"), full_page=True)
    first = page.locator("#search-result tr[data-observation-id]").all_inner_texts()

    fresh = page.context.new_page()  # someone opening the shared link
    fresh.goto(page.url)
    assert fresh.locator("#id_message").input_value() == params["message"][0]
    assert fresh.locator("#search-result tr[data-observation-id]").all_inner_texts() == first
    assert fresh.locator("#context-xml").count() == 1
    fresh.close()
