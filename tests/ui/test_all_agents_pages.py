"""Issue 40: the lists have an "All agents" choice (Scopes, Search, Usage); each row names
its agent, and an agent parameter that names no agent is a 404 page, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.jobs import job_execute
from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.scopes import scope_get
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


def _consolidate(store, scope) -> None:
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="ui", actor="t"
    )
    job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda run: consolidation_run(store=store, run=run),
    )


def test_usage_all_agents_has_a_row_per_agent_and_their_sum(client_as, store, settings, two_agents):
    settings.MEMORY_LLM_PRICES = {OFFLINE_MODEL: (1000.0, 1000.0)}
    store.prices = dict(settings.MEMORY_LLM_PRICES)
    for scope in two_agents:
        _consolidate(store, scope)
    client = client_as("viewer")
    html = client.get(reverse("ui:usage"), {"agent": "all", "days": "7"}).content.decode()
    assert ALL_OPTION in html and "All agents, last 7 days" in html
    rows = html.split('id="by-agent"')[1].split("</table>")[0]
    assert 'data-agent="north-bot"' in rows and 'data-agent="south-bot"' in rows
    total_jobs = html.split('id="usage-total"')[1].split("</dl>")[0]
    assert "<dt>Jobs</dt><dd>2" in total_jobs
    for scope in two_agents:  # the costliest scopes across agents, each naming its agent
        row = html.split(f'data-scope-id="{scope.id}"')[1].split("</tr>")[0]
        assert scope.agent_id in row


def test_search_all_agents_merges_each_agents_hits_by_score_each_named(client_as, store):
    # Without a user only shared scopes are searched: a shard in each agent.
    for agent_id, name in (("north-bot", "Nora"), ("south-bot", "Sami")):
        shard = ScopeFactory.create(store=store, agent_id=agent_id, shard=True, name=name)
        ObservationFactory.create(store=store, scope=shard, content=f"{name} invoices monthly")
    client = client_as("viewer")
    query = {"agent": "all", "message": "invoices", "user": "", "groups": ""}
    html = client.get(reverse("ui:search"), query).content.decode()
    assert ALL_OPTION in html and 'id="all-agents-note"' in html
    for agent_id, name in (("north-bot", "Nora"), ("south-bot", "Sami")):
        [hit] = [o for o in html.split("<tr data-observation-id=")[1:] if f"{name} invoices" in o]
        assert f'<td class="agent-name">{agent_id}</td>' in hit
    one = client.get(reverse("ui:search"), {**query, "agent": "south-bot"}).content.decode()
    assert "Sami invoices" in one and "Nora invoices" not in one


def test_users_find_in_all_agents_names_each_rows_agent(client_as, store):
    for agent_id, user_id in (("north-bot", "cust-1"), ("south-bot", "cust-2")):
        ScopeFactory.create(store=store, agent_id=agent_id, user_id=user_id)
    client = client_as("viewer")
    html = client.get(reverse("ui:user_audit"), {"q": "cust", "in": "all"}).content.decode()
    assert '<option value="all" selected>All agents</option>' in html
    assert 'data-user-id="cust-1" data-agent-id="north-bot"' in html
    assert 'data-user-id="cust-2" data-agent-id="south-bot"' in html
    one = client.get(reverse("ui:user_audit"), {"q": "cust", "in": "south-bot"}).content.decode()
    assert "cust-2" in one and 'data-user-id="cust-1"' not in one
    missing = client.get(reverse("ui:user_audit"), {"q": "cust", "in": "no-such-bot"})
    assert missing.status_code == 404
