"""Support staff in a browser: the lines an observation cites (Users page and log), merging a
near duplicate, pinning a sentence of the consolidation, and an edited text's history."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest
from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.observations import do_observation_update
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add, observation_list
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium
from tests.streams.memory.test_speakers import form, say
from tests.streams.people.test_privacy import AGENT

pytestmark = [pytest.mark.browser, needs_chromium]


def test_cited_lines_merge_pin_and_history(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    alice, bob = str(ObjectId()), str(ObjectId())
    m_alice, m_bob = str(ObjectId()), str(ObjectId())
    say(store, alice, [(m_alice, alice, "I am allergic to peanuts.")])
    say(store, alice, [(m_bob, bob, "I live in Lisbon since 2020.")])
    form(store)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, alice))
    first = observation_add(
        store=store, scope=scope, content="Alice keeps two cats and one dog in her Lisbon flat."
    )
    near = observation_add(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        content="Alice keeps two cats and one dog in her Lisbon flat today.",
    )
    assert near.similar_to == first.id
    do_observation_update(
        store=store, actor=Actor.ui("olivia"), observation=first,
        content="Alice keeps two cats and a dog in her Lisbon flat.",
    )  # fmt: skip
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text="Alice is allergic to peanuts. Alice has pets at home.", absorbed_ids=[],
        trigger="threshold", actor=None,
    )  # fmt: skip

    make_user("admin", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/users/?{urlencode({'agent': AGENT, 'user': alice})}")
    cited = page.locator(f'li[data-message-id="{m_alice}"]').first
    cited.wait_for()
    assert "I am allergic to peanuts." in cited.inner_text()
    assert page.locator(f'li[data-message-id="{m_bob}"]').count() == 0
    page.screenshot(path=str(artifacts_dir / "precise_users_cited.png"), full_page=True)

    page.goto(f"{live_server.url}/scopes/{scope.id}/")
    row = page.locator(f'tr[data-observation-id="{near.id}"]')
    assert row.locator(f'a[data-similar-to="{first.id}"]').count() == 1
    page.screenshot(path=str(artifacts_dir / "precise_log_similar.png"), full_page=True)
    row.locator("button:has-text('Merge: keep the other')").click()
    page.get_by_text("Merged: kept").wait_for()
    fresh = scope_get(store=store, scope_id=scope.id)
    live = [o.id for o in observation_list(store=store, scope=fresh).items]
    assert near.id not in live and first.id in live

    page.locator("summary:has-text('Pin a sentence')").click()
    page.locator("li:has-text('Alice has pets at home.') >> button:has-text('Pin')").click()
    page.get_by_text("Pinned: every later version holds it").wait_for()
    assert page.locator(".pin-text", has_text="Alice has pets at home.").count() == 1
    assert scope_get(store=store, scope_id=scope.id).pins == ["Alice has pets at home."]
    page.screenshot(path=str(artifacts_dir / "precise_pins.png"), full_page=True)

    page.locator(f'tr[data-observation-id="{first.id}"] >> text=History').click()
    page.locator("#text-history").wait_for()
    assert "Alice keeps two cats and one dog in her Lisbon flat." in page.inner_text(
        "#text-history"
    )
    page.screenshot(path=str(artifacts_dir / "precise_history.png"), full_page=True)
