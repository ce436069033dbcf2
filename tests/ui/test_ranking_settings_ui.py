"""The ranking switches on the settings pages: the scope page's block and the agent's page,
each switch with its measured effect beside it."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.records.audit import audit_page
from tests.factories import ScopeFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("traits", [{}, {"group": True}, {"collective": True}, {"shard": True}])
def test_the_scope_page_shows_and_saves_its_ranking_block(client_as, store, traits):
    scope = ScopeFactory.create(store=store, **traits)
    client = client_as("operator")
    html = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    block = html.split('id="ranking-form"')[1].split("</form>")[0]
    assert 'data-switch="recency"' in block and "recall@5" in block and "MRR" in block
    assert "LoCoMo" in html

    saved = client.post(reverse("ui:scope_ranking", args=[scope.id]), {"recency": "on", "mmr": ""})
    assert saved.status_code == 302 and saved["Location"].endswith("#ranking")
    assert store.scopes.get(ObjectId(scope.id)).ranking == {"recency": True}
    [entry] = audit_page(store=store, action="scope.update").items
    assert entry.summary["ranking"]["to"] == {"recency": True}
    html = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'data-in-use="on"' in html.split('data-switch="recency"')[1].split("</div>")[0]

    bad = client.post(reverse("ui:scope_ranking", args=[scope.id]), {"recency": "maybe"})
    assert bad.status_code == 302
    assert store.scopes.get(ObjectId(scope.id)).ranking == {"recency": True}
    assert (
        client_as("viewer").post(reverse("ui:scope_ranking", args=[scope.id]), {}).status_code
        == 403
    )


def test_the_agent_ranking_page(client_as, store):
    ScopeFactory.create(store=store, agent_id="bot")
    client = client_as("admin")
    page = client.get(reverse("ui:agent_ranking", args=["bot"]))
    assert page.status_code == 200 and "recall@5" in page.content.decode()
    assert (
        reverse("ui:agent_ranking", args=["bot"])
        in client.get(reverse("ui:agents")).content.decode()
    )
    saved = client.post(reverse("ui:agent_ranking", args=["bot"]), {"feedback": "on"})
    assert saved.status_code == 302
    assert store.agents.get("bot").ranking == {"feedback": True}
    bad = client.post(reverse("ui:agent_ranking", args=["bot"]), {"feedback": "sometimes"})
    assert bad.status_code == 422
    assert client.get(reverse("ui:agent_ranking", args=["nobody"])).status_code == 404
    assert client_as("operator").get(reverse("ui:agent_ranking", args=["bot"])).status_code == 403
