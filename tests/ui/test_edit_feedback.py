"""Correcting a memory gives feedback (issue 30, item 4): the inline Edit on the scope
page answers with a message, "rebuild pending" and the rebuild's live banner, and asks
the consolidation panel to refresh, as Delete does; the Users page edits inline too."""

from __future__ import annotations

import re

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.consolidation import consolidation_commit
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory
from tests.ui.helpers import HTMX

pytestmark = pytest.mark.django_db
FACTS = ["Gene lives in Porto.", "Gene kiteboards in spring."]


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


@pytest.fixture
def absorbed(store):
    """Gene's individual memory: two observations, both absorbed by version 1."""
    scope = ScopeFactory.create(
        store=store, agent_id="support-bot", user_id="u-gene", display_name="Gene"
    )
    observations = [ObservationFactory.create(store=store, scope=scope, content=t) for t in FACTS]
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        expected_version=0,
        text=" ".join(FACTS),
        absorbed_ids=[o.id for o in observations],
        trigger="threshold",
        actor=None,
    )
    return scope, observations


def _save(client, observation_id: str, content: str, **extra: str):
    return client.post(
        reverse("ui:observation_edit", args=[observation_id]),
        {"content": content, **extra},
        **HTMX,
    )


def _flash(html: str) -> str:
    match = re.search(r'<div id="flash" hx-swap-oob="true">(.*?)</div>', html, re.S)
    assert match is not None, html
    return match.group(1)


def test_an_inline_correction_says_so_and_that_a_rebuild_is_pending(client_as, absorbed):
    scope, observations = absorbed
    client = client_as("operator")
    response = _save(client, observations[0].id, "Gene lives in Braga.")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith(f'<tr id="obs-{observations[0].id}"')
    assert "Gene lives in Braga." in html and "just-saved" in html
    flash = _flash(html)
    assert "Observation saved." in flash and "Rebuild pending" in flash
    # Counts read as words, as in the other flashes.
    assert "1 consolidation that held the old text is being rebuilt" in flash, flash
    # The rebuild's live banner replaces the (empty) job status of the scope page.
    banner = re.search(r'<div id="job-status"[^>]*>', html)
    assert banner is not None and 'hx-swap-oob="true"' in banner.group(0)
    assert "every 1s" in banner.group(0)
    # The consolidation panel listens for this (the log does not: the row is fresh).
    assert response["HX-Trigger"] == "observation-saved"
    panel = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "observation-saved from:body" in panel.split('id="consolidation-panel"')[1][:400]
    # The message went out with this answer: the next page does not repeat it.
    assert (
        "Observation saved."
        not in client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    )


def test_the_consolidation_panel_shows_the_pending_rebuild(client_as, absorbed, store, monkeypatch):
    """What `scope-changed` fetches, while the rebuild has not run yet."""
    scope, observations = absorbed
    monkeypatch.setattr("streams.actions.base._dispatcher", lambda jobs: None)
    client = client_as("operator")
    _save(client, observations[0].id, "Gene lives in Braga.")
    panel = client.get(reverse("ui:scope_consolidation", args=[scope.id]), **HTMX)
    html = panel.content.decode()
    assert 'id="rebuild-pending"' in html and "every 2s" in html


def test_a_correction_of_a_pending_observation_needs_no_rebuild(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="support-bot", user_id="u-gene")
    pending = ObservationFactory.create(store=store, scope=scope, content="Gene likes tea.")
    html = _save(client_as("operator"), pending.id, "Gene likes green tea.").content.decode()
    flash = _flash(html)
    assert "Observation saved." in flash and "Rebuild" not in flash
    assert 'id="job-status"' not in html


def test_the_users_page_edits_an_observation_in_place(client_as, absorbed, store):
    _scope, observations = absorbed
    client = client_as("operator")
    url = reverse("ui:user_audit") + "?agent=support-bot&user=u-gene"
    page = client.get(url).content.decode()
    edit = f"{reverse('ui:observation_edit', args=[observations[0].id])}?from=user"
    assert f'hx-get="{edit}"' in page and f'id="obs-{observations[0].id}"' in page
    form = client.get(edit, **HTMX).content.decode()
    assert 'name="from" value="user"' in form and "?from=user" in form  # and Cancel
    response = _save(client, observations[0].id, "Gene lives in Braga.", **{"from": "user"})
    html = response.content.decode()
    row = html.split("<template>")[0]
    assert "Gene lives in Braga." in row and "just-saved" in row
    assert "Mark private" not in row and row.count("<td") == 4  # the Users page's row
    assert "Rebuild pending" in _flash(html)
    assert 'id="job-status"' not in html  # no banner target on the Users page
    assert store.observations.get(ObjectId(observations[0].id)).content == "Gene lives in Braga."
    cancel = client.get(
        reverse("ui:observation_row", args=[observations[1].id]) + "?from=user", **HTMX
    ).content.decode()
    assert "Mark private" not in cancel and cancel.count("<td") == 4


def test_viewers_get_no_edit_on_the_users_page(client_as, absorbed):
    _scope, observations = absorbed
    page = (
        client_as("viewer")
        .get(reverse("ui:user_audit") + "?agent=support-bot&user=u-gene")
        .content.decode()
    )
    assert observations[0].content in page
    assert reverse("ui:observation_edit", args=[observations[0].id]) not in page


def test_the_users_page_memory_says_rebuild_pending_and_follows_it(
    client_as, absorbed, monkeypatch
):
    _scope, observations = absorbed
    monkeypatch.setattr("streams.actions.base._dispatcher", lambda jobs: None)
    client = client_as("operator")
    _save(client, observations[0].id, "Gene lives in Braga.", **{"from": "user"})
    url = reverse("ui:user_audit") + "?agent=support-bot&user=u-gene&part=memory"
    memory = client.get(url, **HTMX).content.decode()
    assert memory.startswith('<section class="panel panel-pad" aria-label="Individual memory"')
    assert 'id="user-rebuild-pill"' in memory and "every 2s" in memory
