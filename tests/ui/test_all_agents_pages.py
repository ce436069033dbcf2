"""Issue 40: the lists have an "All agents" choice (Scopes, Search, Usage); each row names
its agent, and an agent parameter that names no agent is a 404 page, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import ObservationFactory, ScopeFactory

ALL_OPTION = '<option value="all" selected>All agents</option>'


@pytest.fixture
def two_agents(store):
    north = ScopeFactory.create(store=store, agent_id="north-bot", display_name="Nora")
    south = ScopeFactory.create(store=store, agent_id="south-bot", display_name="Sami")
    ObservationFactory.create(store=store, scope=north, content="Nora invoices in euros")
    ObservationFactory.create(store=store, scope=south, content="Sami invoices in pounds")
    return north, south


def test_scopes_all_agents_lists_both_agents_scopes_each_named(client_as, two_agents):
    client = client_as("viewer")
    html = client.get(reverse("ui:scopes"), {"agent": "all"}).content.decode()
    assert ALL_OPTION in html
    for scope in two_agents:
        row = html.split(f'data-scope-id="{scope.id}"')[1].split("</tr>")[0]
        assert scope.display_name in row and f">{scope.agent_id}</a>" in row
    one = client.get(reverse("ui:scopes"), {"agent": "north-bot"}).content.decode()
    assert "Nora" in one and "Sami" not in one


@pytest.mark.parametrize("page", ["ui:scopes", "ui:usage", "ui:search"])
@pytest.mark.parametrize("value", ["no-such-bot", "x" * 300])
def test_an_agent_that_is_none_is_a_404_page(client_as, two_agents, page, value):
    response = client_as("viewer").get(reverse(page), {"agent": value, "message": "invoices"})
    assert response.status_code == 404
