"""Near duplicates in the observation log: a "similar to" link and a merge that keeps one
and deletes the other (an operator's action, audited)."""

from __future__ import annotations

from django.urls import reverse

from streams.memory.observations import observation_add, observation_get
from streams.records.audit import audit_page
from tests.factories import ScopeFactory


def test_merge_keeps_one_and_deletes_the_other(client_as, store):
    scope = ScopeFactory.create(store=store, group=True)
    first = observation_add(
        store=store, scope=scope, content="The team ships on Tuesdays and Thursdays at noon UTC."
    )
    near = observation_add(
        store=store,
        scope=scope,
        content="The team ships on Tuesdays and Thursdays at noon UTC sharp.",
    )
    assert near.similar_to == first.id

    viewer = client_as("viewer")
    log = viewer.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert f'data-similar-to="{first.id}"' in log
    assert "Merge: keep this" not in log  # viewers see the link, not the action
    denied = viewer.post(reverse("ui:observation_merge", args=[near.id]), {"keep": near.id})
    assert denied.status_code in (302, 403)
    assert not observation_get(store=store, observation_id=first.id).deleted

    operator = client_as("operator")
    log = operator.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "Merge: keep this" in log and "Merge: keep the other" in log
    response = operator.post(reverse("ui:observation_merge", args=[near.id]), {"keep": first.id})
    assert response.status_code == 302
    assert observation_get(store=store, observation_id=near.id).deleted
    assert not observation_get(store=store, observation_id=first.id).deleted
    (entry,) = audit_page(store=store, action="observation.merge", limit=5).items
    assert entry.summary["kept"] == first.id and entry.summary["deleted"] == near.id
    assert "The team ships" not in str(entry.summary)  # hashes only

    again = operator.post(reverse("ui:observation_merge", args=[first.id]), {"keep": first.id})
    assert again.status_code == 302  # nothing similar any more: a message, no change
    assert not observation_get(store=store, observation_id=first.id).deleted
