"""The smaller things of issue 30 in a real browser: the top bar stays on one line at
laptop widths, audit actors keep their words whole, and no page 404s on a favicon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.records.audit import audit_record
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]


def _tops(page: Any, selector: str) -> list[float]:
    return [box["y"] for box in (el.bounding_box() for el in page.locator(selector).all()) if box]


@pytest.mark.parametrize("width", [1280, 1400])
def test_the_top_bar_stays_on_one_line(
    live_server, browser, store, make_user, settings, artifacts_dir: Path, width: int
):
    settings.MEMORY_LLM_PROVIDER = "offline"  # the longest badge
    make_user("admin", username="administrator")  # every nav item, a long name
    context = browser.new_context(viewport={"width": width, "height": 700}, bypass_csp=True)
    page = context.new_page()
    try:
        _sign_in(page, live_server, "administrator")
        page.wait_for_url(f"{live_server.url}/")
        page.screenshot(
            path=str(artifacts_dir / f"topbar-{width}.png"),
            clip={"x": 0, "y": 0, "width": width, "height": 120},
        )
        links = _tops(page, ".mainnav a")
        assert len(links) == 11 and max(links) - min(links) < 2, links  # the nav: one row
        row = _tops(page, ".topbar .brand") + _tops(page, ".topbar-end > *")
        bar = page.locator(".topbar-inner").bounding_box()
        # brand, nav and the end items share the bar's one line
        assert bar["height"] < 60, bar
        assert max(row) - min(row) < 20, row
        # ... and all of it fits: nothing runs past the window's right edge.
        rights = [
            box["x"] + box["width"]
            for box in (el.bounding_box() for el in page.locator(".topbar-end > *").all())
            if box
        ]
        assert rights and max(rights) <= width, (rights, width)
    finally:
        context.close()


def test_audit_actors_keep_their_words_whole_and_objects_show_names(
    live_server, page, store, make_user, settings, artifacts_dir: Path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-gene", display_name="Gene Kim"
    )
    for n in range(3):
        audit_record(
            store=store,
            actor="api:support-assistant-production-key",
            action="observation.update",
            object_type="observation",
            object_id=f"6a{n:022d}",
            agent_id="support-bot",
            summary={"content": "a long summary " * 12},
        )
    audit_record(
        store=store,
        actor="ui:olivia-operator",
        action="scope.update",
        object_type="scope",
        object_id=scope.id,
        agent_id="support-bot",
        summary={"consolidation_threshold": {"before": 20, "after": 10}},
    )
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/audit/")
    names = "#audit-table tbody td:nth-child(2) code, #audit-table tbody td:nth-child(5) code"
    assert page.locator(names).count() == 4 + 4  # the actor and the agent of each entry
    lines = page.evaluate(
        f"Array.from(document.querySelectorAll('{names}')).map(el => el.getClientRects().length)"
    )
    assert lines == [1] * 8  # one line box each: no break inside an actor or agent id
    assert page.locator(".audit-object-name").inner_text() == "Gene Kim (individual)"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artifacts_dir / "audit-actors.png"), full_page=False)


def test_no_page_404s_on_a_favicon(live_server, page, store, make_user, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    make_user("viewer", username="vera")
    page.goto(f"{live_server.url}/login/")
    _sign_in(page, live_server, "vera")
    page.wait_for_url(f"{live_server.url}/")
    for path in ("/", "/scopes/", "/audit/", "/api/v1/docs"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
    icon = page.request.get(f"{live_server.url}/favicon.ico")
    assert icon.status == 200 and "svg" in icon.headers["content-type"]
    linked = page.goto(f"{live_server.url}/")
    assert linked is not None
    href = page.locator("link[rel=icon]").get_attribute("href")
    assert href and page.request.get(f"{live_server.url}{href}").status == 200
    assert missing == []
