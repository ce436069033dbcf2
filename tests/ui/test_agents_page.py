"""The Agents page (admins): every agent with its counts, and creating one by hand."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.records.audit import audit_page
from tests.factories import ObservationFactory, ScopeFactory

pytestmark = pytest.mark.django_db


def test_admins_see_every_agent_and_create_one(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="support-bot")
    ObservationFactory.create_batch(2, store=store, scope=scope)
    client = client_as("admin")
    html = client.get(reverse("ui:agents")).content.decode()
    row = html.split('data-agent-id="support-bot"')[1].split("</tr>")[0]
    assert 'data-col="observations">2<' in row
    assert "manage.py create_agent" in html  # says how to add your own

    created = client.post(reverse("ui:agent_create"), {"agent_id": "brand-new-bot"})
    assert created.status_code == 200
    assert 'data-agent-id="brand-new-bot"' in created.content.decode()
    assert store.agents.get("brand-new-bot") is not None
    [entry] = audit_page(store=store, action="agent.create").items
    assert entry.actor == "ui:admin-user" or entry.actor.startswith("ui:")

    again = client.post(reverse("ui:agent_create"), {"agent_id": "brand-new-bot"})
    assert again.status_code == 422 and "exists already" in again.content.decode()


def test_only_admins_reach_the_agents_page(client_as):
    assert client_as("operator").get(reverse("ui:agents")).status_code == 403
    assert (
        client_as("viewer").post(reverse("ui:agent_create"), {"agent_id": "x"}).status_code == 403
    )
