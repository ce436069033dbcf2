"""The scope page's states: rebuild pending, paused (with pause/resume), honest restore,
and the hand editor's word limit."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.consolidation import consolidation_commit
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory

pytestmark = pytest.mark.django_db


def absorbed_scope(store, *, later: int = 2):
    """v1 absorbed one observation, v2 absorbed `later` more; fails any LLM it would need."""
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True, display_name="Eden")
    first = ObservationFactory.create(store=store, scope=scope, content="Deploys on Fridays.")
    scope = scope_get(store=store, scope_id=scope.id)
    consolidation_commit(
        store=store, scope=scope, expected_version=0, text="Deploys on Fridays.",
        absorbed_ids=[first.id], trigger="manual", actor=None,
    )  # fmt: skip
    others = [
        ObservationFactory.create(store=store, scope=scope, content=f"Fact {i}.")
        for i in range(later)
    ]
    scope = scope_get(store=store, scope_id=scope.id)
    consolidation_commit(
        store=store, scope=scope, expected_version=1, text="Deploys on Fridays. Facts.",
        absorbed_ids=[o.id for o in others], trigger="manual", actor=None,
    )  # fmt: skip
    return scope_get(store=store, scope_id=scope.id), first


def test_the_page_says_rebuild_pending_while_a_flag_is_set(client_as, store):
    scope, first = absorbed_scope(store)
    store.scopes.flag_rebuild(ObjectId(scope.id), [ObjectId(first.id)])
    html = client_as("viewer").get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'id="rebuild-pill"' in html and "rebuild pending" in html
    assert "Rebuild pending." in html and "1 observation this text absorbed was deleted" in html


def test_restore_says_before_and_after_what_goes_back_to_pending(client_as, store):
    scope, _ = absorbed_scope(store, later=3)
    client = client_as("operator")
    html = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "3 obs. absorbed after v1 go back to pending" in html
    response = client.post(reverse("ui:consolidation_restore", args=[scope.id, 1]), follow=True)
    after = response.content.decode()
    assert "Restored version 1 as version 3. 3 observations absorbed after v1 went back" in after
    assert scope_get(store=store, scope_id=scope.id).pending_count == 3


def test_pause_and_resume_from_the_scope_page(client_as, store):
    scope, _ = absorbed_scope(store)
    client = client_as("operator")
    url = reverse("ui:scope_active", args=[scope.id])
    paused = client.post(url, {"active": "false"}, follow=True).content.decode()
    assert scope_get(store=store, scope_id=scope.id).is_active is False
    assert 'id="paused-pill"' in paused and "Resume memory" in paused
    assert "Memory paused" in paused
    resumed = client.post(url, {"active": "true"}, follow=True).content.decode()
    assert scope_get(store=store, scope_id=scope.id).is_active is True
    assert "Pause memory" in resumed and 'id="paused-pill"' not in resumed
    assert client_as("viewer").post(url, {"active": "false"}).status_code == 403


def test_a_hand_edit_over_the_word_limit_is_refused_with_the_count(client_as, store):
    scope, _ = absorbed_scope(store)
    client = client_as("operator")
    url = reverse("ui:consolidation_edit", args=[scope.id])
    form = client.get(url).content.decode()
    assert 'data-word-limit="500"' in form and 'id="word-count"' in form
    response = client.post(url, {"text": "word " * 501, "expected_version": 2})
    assert response.status_code == 422
    assert "has 501 words; this scope allows 500" in response.content.decode()
    empty = client.post(url, {"text": "  ", "expected_version": 2})
    assert empty.status_code == 422 and "must not be empty" in empty.content.decode()
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 2


def test_the_users_page_pauses_and_resumes_memory_for_a_user(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", user_id="u1", display_name="Gene")
    client = client_as("operator")
    page = f"{reverse('ui:user_audit')}?agent=a1&user=u1"
    html = client.get(page).content.decode()
    assert "Pause memory for this user" in html
    url = reverse("ui:scope_active", args=[scope.id])
    back = client.post(url, {"active": "false", "next": page}, follow=True)
    assert back.redirect_chain[-1][0] == page
    assert "Resume memory for this user" in back.content.decode()
    assert scope_get(store=store, scope_id=scope.id).is_active is False
    assert "Pause memory" not in client_as("viewer").get(page).content.decode()
