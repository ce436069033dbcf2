"""Superseded facts on the pages (issue 42), in all four scope types: the scope page shows
each current fact's chain (what it replaced, true until when) and an undo; the review
page decides a shared scope's contradiction with "supersedes the older"; the log's
"include superseded" lists the replaced one, marked. Undo is audited."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.observations import observation_add, observation_get
from streams.records.audit import audit_page
from tests.factories import ScopeFactory

pytestmark = pytest.mark.django_db
OLD = "Dan lives in Porto."
NEW = "Dan lives in Lisbon."
TRAITS = [{"user_id": "u1"}, {"group": True}, {"collective": True}, {"shard": True}]
IDS = ["user", "group", "collective", "shard"]


def superseded(client, store, traits):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **traits)
    old = observation_add(store=store, scope=scope, content=OLD)
    new = observation_add(store=store, scope=scope, content=NEW)
    if scope.scope_type != "individual":
        assert new.review_status == "in_review"
        page = client.get(reverse("ui:review"), {"agent": "agent-1"}).content.decode()
        assert "Approve: supersedes the older" in page
        client.post(reverse("ui:review_decide", args=[new.id]), {"decision": "supersede"})
    return scope, old, new


@pytest.mark.parametrize("traits", TRAITS, ids=IDS)
def test_the_scope_page_shows_the_chain_and_undo_restores(client_as, store, traits):
    operator = client_as("operator")
    scope, old, new = superseded(operator, store, traits)
    assert observation_get(store=store, observation_id=old.id).superseded_by == new.id
    url = reverse("ui:scope_detail", args=[scope.id])
    page = operator.get(url).content.decode()
    assert f'data-chain-for="{new.id}"' in page and f'data-replaced="{old.id}"' in page
    assert "true until" in page and "Undo" in page
    assert f'id="obs-{old.id}"' not in page  # the replaced one is not in the current log
    every = operator.get(url, {"superseded": "on"}).content.decode()
    assert f'id="obs-{old.id}"' in every and f'data-superseded-by="{new.id}"' in every

    viewer = client_as("viewer")
    assert "data-undo-supersession" not in viewer.get(url).content.decode()
    denied = viewer.post(reverse("ui:observation_unsupersede", args=[old.id]))
    assert denied.status_code in (302, 403)
    assert observation_get(store=store, observation_id=old.id).superseded_by == new.id

    operator = client_as("admin")
    done = operator.post(reverse("ui:observation_unsupersede", args=[old.id]), follow=True)
    assert "is current again" in done.content.decode()
    assert observation_get(store=store, observation_id=old.id).superseded_by is None
    assert ObjectId(old.id) in [
        ObjectId(i) for i in store.scopes.get(ObjectId(scope.id)).pending_observation_ids
    ]
    entries = audit_page(store=store, object_id=old.id).items
    assert "observation.unsupersede" in [e.action for e in entries]
    again = operator.post(reverse("ui:observation_unsupersede", args=[old.id]), follow=True)
    assert "not superseded" in again.content.decode()
