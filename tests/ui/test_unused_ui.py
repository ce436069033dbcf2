"""The unused-memory report page and the bulk job's Undo (UI): counts per scope in all four
scope types, the bulk filter, and the bad input."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.core.documents import utcnow
from tests.factories import ObservationFactory, ScopeFactory

pytestmark = pytest.mark.django_db
TRAITS = [{}, {"group": True}, {"collective": True}, {"shard": True}]


@pytest.mark.parametrize("traits", TRAITS)
def test_the_report_counts_per_scope_and_links_to_the_bulk_filter(client_as, store, traits):
    scope = ScopeFactory.create(store=store, **traits)
    for word in ("apples", "pears", "plums"):
        ObservationFactory.create(store=store, scope=scope, content=f"Old note about {word}")
    store.observations.collection.update_many(
        {"scope_id": ObjectId(scope.id)}, {"$set": {"created_at": utcnow() - timedelta(days=9)}}
    )
    client = client_as("viewer")
    html = client.get(reverse("ui:unused", args=["agent-1"]), {"days": 7}).content.decode()
    row = html.split(f'data-scope-id="{scope.id}"')[1].split("</tr>")[0]
    assert 'data-col="unused">3<' in row and "unused_days=7" in row, row
    fresh = client.get(reverse("ui:unused", args=["agent-1"]), {"days": 30}).content.decode()
    assert 'data-col="unused">0<' in fresh.split(f'data-scope-id="{scope.id}"')[1]

    log = client.get(reverse("ui:scope_detail", args=[scope.id]), {"unused_days": 7})
    assert log.content.decode().count("Old note about") >= 3
    none = client.get(
        reverse("ui:scope_detail", args=[scope.id]), {"unused_days": 30}, HTTP_HX_REQUEST="true"
    )
    assert "Old note about" not in none.content.decode()

    operator = client_as("operator")
    preview = operator.get(
        reverse("ui:observation_bulk", args=[scope.id]), {"unused_days": 7, "action": "delete"}
    )
    assert preview.status_code == 200 and "3 observations match" in preview.content.decode()
    scopes = operator.get(reverse("ui:scopes"), {"agent": "agent-1"}).content.decode()
    assert reverse("ui:unused", args=["agent-1"]) in scopes


@pytest.mark.parametrize("days", ["0", "-1", "2.5", "many", "4000"])
def test_bad_days_are_422(client_as, store, days):
    scope = ScopeFactory.create(store=store, group=True)
    client = client_as("operator")
    assert client.get(reverse("ui:unused", args=["agent-1"]), {"days": days}).status_code == 422
    preview = client.get(
        reverse("ui:observation_bulk", args=[scope.id]), {"unused_days": days, "action": "delete"}
    )
    assert preview.status_code == 422


def test_unknown_agent_and_unknown_bulk_job(client_as, store):
    client = client_as("operator")
    assert client.get(reverse("ui:unused", args=["nobody"])).status_code == 404
    assert client.post(reverse("ui:bulk_undo", args=[str(ObjectId())])).status_code == 404
    assert client.post(reverse("ui:bulk_undo", args=["nope"])).status_code == 404
    assert client_as("viewer").post(reverse("ui:bulk_undo", args=["nope"])).status_code == 403
