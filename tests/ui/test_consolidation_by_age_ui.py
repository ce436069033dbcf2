"""The scope settings form sets consolidation by age (issue 42 item 2), for every scope type."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from tests.factories import ScopeFactory

FORM = {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500}


@pytest.mark.parametrize(
    "traits",
    [{"user_id": "u1"}, {"group": True}, {"collective": True}, {"shard": True}],
    ids=["individual", "group", "collective", "shard"],
)
def test_the_settings_form_sets_and_clears_the_days(client_as, store, settings, traits):
    settings.MEMORY_CONSOLIDATE_AFTER_DAYS = "individual=3,group=14,collective=30,shard=21"
    scope = ScopeFactory.create(store=store, agent_id="a1", **traits)
    default = {"individual": 3, "group": 14, "collective": 30, "shard": 21}[scope.kind]
    client = client_as("operator")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'name="consolidate_after_days"' in page
    assert f"Empty: the {scope.kind} default ({default} days)" in page
    assert f'data-age-days="{default}"' in page
    url = reverse("ui:scope_settings", args=[scope.id])
    bad = client.post(url, {**FORM, "consolidate_after_days": -1})
    assert bad.status_code == 422
    ok = client.post(url, {**FORM, "consolidate_after_days": 2}, follow=True)
    assert "Settings saved." in ok.content.decode()
    assert store.scopes.get(ObjectId(scope.id)).consolidate_after_days == 2
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'or once one waited <span data-age-days="2">2 days</span>' in page
    client.post(url, {**FORM, "consolidate_after_days": ""})
    assert store.scopes.get(ObjectId(scope.id)).consolidate_after_days is None
