"""Retention on the scope page: the cap in the settings form, and what it purged."""

from __future__ import annotations

from bson import ObjectId
from django.urls import reverse

from streams.consolidation import consolidation_commit
from streams.lifecycle import retention_sweep
from streams.observations import observation_add
from streams.scopes import scope_get
from tests.factories import ScopeFactory


def test_the_cap_is_set_in_the_settings_and_the_page_shows_what_it_purged(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    added = [
        observation_add(store=store, scope=scope, content=f"Crane {n} lifts {n * 3} tonnes")
        for n in range(12)
    ]
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text="Cranes lift tonnes.", absorbed_ids=[o.id for o in added], trigger="threshold",
        actor=None,
    )  # fmt: skip
    client = client_as("operator")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "Retention: off" in page and 'name="max_observations"' in page
    bad = client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500,
         "max_observations": 3},
    )  # fmt: skip
    assert bad.status_code == 422
    ok = client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500,
         "max_observations": 10},
        follow=True,
    )  # fmt: skip
    assert "Settings saved." in ok.content.decode()
    assert store.scopes.get(ObjectId(scope.id)).max_observations == 10
    assert retention_sweep(store=store) == 2
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "keeps at most 10 observations (10 now)" in page
    assert 'data-retention-purged="2"' in page
    # Emptying the field turns the cap off.
    client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500,
         "max_observations": ""},
    )  # fmt: skip
    assert store.scopes.get(ObjectId(scope.id)).max_observations is None
