"""Pins on the scope page: pin a sentence of the consolidation, unpin it, and save a hand
edit "and pin" (its new sentences are pinned); operators only."""

from __future__ import annotations

from django.urls import reverse

from streams.memory.consolidation import consolidation_commit
from streams.memory.scopes import scope_get
from tests.factories import ScopeFactory


def consolidated(store, text: str):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    consolidation_commit(
        store=store, scope=scope, expected_version=0, text=text, absorbed_ids=[],
        trigger="threshold", actor=None,
    )  # fmt: skip
    return scope_get(store=store, scope_id=scope.id)


def test_pin_and_unpin_a_sentence_on_the_scope_page(client_as, store):
    scope = consolidated(store, "The team deploys on Fridays. Gene leads the team.")
    viewer = client_as("viewer")
    page = viewer.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "Nothing pinned." in page and "Pin a sentence" not in page
    denied = viewer.post(reverse("ui:scope_pin", args=[scope.id]), {"pin": "Gene leads the team."})
    assert denied.status_code in (302, 403)
    assert scope_get(store=store, scope_id=scope.id).pins == []

    operator = client_as("operator")
    page = operator.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'name="pin" value="Gene leads the team."' in page
    response = operator.post(
        reverse("ui:scope_pin", args=[scope.id]), {"pin": "Gene leads the team."}
    )
    assert response.status_code == 302
    assert scope_get(store=store, scope_id=scope.id).pins == ["Gene leads the team."]
    page = operator.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert '<span class="pin-text">Gene leads the team.</span>' in page
    assert 'name="unpin" value="Gene leads the team."' in page

    operator.post(reverse("ui:scope_pin", args=[scope.id]), {"unpin": "Gene leads the team."})
    assert scope_get(store=store, scope_id=scope.id).pins == []
    empty = operator.post(reverse("ui:scope_pin", args=[scope.id]), {})
    assert empty.status_code == 302


def test_save_and_pin_pins_what_the_hand_edit_added(client_as, store):
    scope = consolidated(store, "The team deploys on Fridays.")
    operator = client_as("operator")
    url = reverse("ui:consolidation_edit", args=[scope.id])
    assert "Save and pin" in operator.get(url).content.decode()
    response = operator.post(
        url,
        {
            "text": "The team deploys on Fridays. Never page Gene at night.",
            "expected_version": 1,
            "and_pin": "1",
        },
    )
    assert response.status_code == 302, response.content.decode()[:500]
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.pins == ["Never page Gene at night."]
    assert fresh.consolidation_version == 2

    # A plain save that drops the pinned sentence: the new version holds it anyway.
    operator.post(url, {"text": "The team deploys on Tuesdays.", "expected_version": 2})
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.consolidation_version == 3
    assert "Never page Gene at night." in fresh.consolidation
    page = operator.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "pins kept" in page
