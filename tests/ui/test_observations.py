"""Observation edits from the scope page: inline edit, private, delete, add; and failures."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_list
from tests.factories import ScopeFactory
from tests.ui.helpers import HTMX, scope_with_history

pytestmark = pytest.mark.django_db


def _first(store, scope):
    return observation_list(store=store, scope=scope, limit=1).items[0]


def test_inline_edit_form_and_save_as_htmx(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    client = client_as("operator")
    form = client.get(reverse("ui:observation_edit", args=[observation.id]), **HTMX)
    html = form.content.decode()
    assert html.lstrip().startswith(f'<tr id="obs-{observation.id}"')
    assert observation.content in html and "csrfmiddlewaretoken" in html
    saved = client.post(
        reverse("ui:observation_edit", args=[observation.id]),
        {"content": "Gene moved to Braga.", "private": "on"},
        **HTMX,
    )
    row = saved.content.decode()
    assert "Gene moved to Braga." in row and "just-saved" in row and "private" in row
    fresh = store.observations.get(ObjectId(observation.id))
    assert fresh.content == "Gene moved to Braga." and fresh.private


def test_edit_as_a_full_page_redirects_back_with_a_message(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    client = client_as("operator")
    page = client.get(reverse("ui:observation_edit", args=[observation.id]))
    assert "<html" in page.content.decode()
    response = client.post(
        reverse("ui:observation_edit", args=[observation.id]), {"content": "Fixed."}, follow=True
    )
    assert "Observation saved." in response.content.decode()


def test_empty_content_shows_the_error_next_to_the_field(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    response = client_as("operator").post(
        reverse("ui:observation_edit", args=[observation.id]), {"content": "   "}, **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert 'class="field-error"' in html and "This field is required." in html


def test_editing_a_deleted_observation_is_refused_with_a_message(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    observation_delete(store=store, observation=observation)
    response = client_as("operator").post(
        reverse("ui:observation_edit", args=[observation.id]), {"content": "x"}, follow=True
    )
    assert "The observation is deleted; it cannot be changed." in response.content.decode()


def test_mark_private_and_back(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    client = client_as("operator")
    response = client.post(
        reverse("ui:observation_private", args=[observation.id]), {"private": "true"}, follow=True
    )
    assert "Marked private." in response.content.decode()
    assert store.observations.get(ObjectId(observation.id)).private
    client.post(reverse("ui:observation_private", args=[observation.id]), {"private": "false"})
    assert not store.observations.get(ObjectId(observation.id)).private


def test_delete_asks_first_then_soft_deletes(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    client = client_as("operator")
    confirm = client.get(reverse("ui:observation_delete", args=[observation.id]))
    assert "Delete this observation?" in confirm.content.decode()
    assert store.observations.get(ObjectId(observation.id)).deleted_at is None
    done = client.post(reverse("ui:observation_delete", args=[observation.id]), follow=True)
    assert "Observation deleted" in done.content.decode()
    assert store.observations.get(ObjectId(observation.id)).deleted_at is not None
    shown = client.get(
        reverse("ui:scope_detail", args=[scope.id]), {"deleted": "on"}, **HTMX
    ).content.decode()
    assert "is-deleted" in shown


def test_add_an_observation_by_hand(client_as, store):
    scope = scope_with_history(store)
    response = client_as("operator").post(
        reverse("ui:observation_add", args=[scope.id]),
        {"content": "Gene has a cat named Miso."},
        follow=True,
    )
    assert "Observation added" in response.content.decode()
    assert "Gene has a cat named Miso." in response.content.decode()
    assert store.scopes.get(ObjectId(scope.id)).pending_count == 4


def test_adding_an_empty_observation_shows_the_form_with_the_error(client_as, store):
    scope = scope_with_history(store)
    response = client_as("operator").post(
        reverse("ui:observation_add", args=[scope.id]), {"content": ""}
    )
    assert response.status_code == 422
    assert "This field is required." in response.content.decode()


def test_cancel_swaps_the_row_back(client_as, store):
    scope = scope_with_history(store)
    observation = _first(store, scope)
    html = (
        client_as("viewer")
        .get(reverse("ui:observation_row", args=[observation.id]), **HTMX)
        .content.decode()
    )
    assert html.lstrip().startswith(f'<tr id="obs-{observation.id}"') and "Edit" not in html


@pytest.mark.parametrize("name", ["ui:observation_edit", "ui:observation_delete"])
def test_unknown_observation_is_a_404(client_as, name):
    assert client_as("operator").get(reverse(name, args=["f" * 24])).status_code == 404


@pytest.mark.parametrize(
    "traits", [{}, {"group": True}, {"collective": True}, {"shard": True}], ids=str
)
def test_an_edit_in_the_page_reaches_the_next_add_by_hand(client_as, store, traits):
    """The add's kept window (`streams.memory.window`) follows an edit made in the UI:
    on each scope type, Lisbon added by hand no longer contradicts a Porto edited away."""
    scope = ScopeFactory.create(store=store, **traits)
    client = client_as("operator")

    def add(content: str):
        client.post(reverse("ui:observation_add", args=[scope.id]), {"content": content})
        fresh = store.scopes.get(ObjectId(scope.id))
        return observation_list(store=store, scope=fresh, limit=1).items[0]

    porto = add("Ada lives in Porto.")
    add("Ada plays the cello.")
    client.post(reverse("ui:observation_edit", args=[porto.id]), {"content": "Ada reads poetry."})
    assert store.observations.get(ObjectId(porto.id)).content == "Ada reads poetry."
    assert add("Ada lives in Lisbon.").contradicts == []
