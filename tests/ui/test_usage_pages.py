"""Cost and health in the UI: the usage page, the dashboard's rankings, the scope panel."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.jobs import job_execute
from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory


@pytest.fixture
def world(store, settings):
    settings.MEMORY_LLM_PRICES = {OFFLINE_MODEL: (1000.0, 1000.0)}  # visible cents
    store.prices = dict(settings.MEMORY_LLM_PRICES)
    costly = ScopeFactory.create(store=store, agent_id="a1", display_name="Costly")
    waiting = ScopeFactory.create(store=store, agent_id="a1", display_name="Waiting")
    for _ in range(3):
        ObservationFactory.create(store=store, scope=costly)
    for _ in range(5):
        ObservationFactory.create(store=store, scope=waiting)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=costly.id), trigger="ui", actor="t"
    )
    job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda run: consolidation_run(store=store, run=run),
    )
    # A run that fails still sees (and ranks) the waiting scope's backlog.
    failing = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=waiting.id), trigger="ui", actor="t"
    )
    with pytest.raises(RuntimeError):
        job_execute(
            store=store,
            job_id=failing.id,
            llm=OfflineProvider(),
            work=lambda run: (_ for _ in ()).throw(RuntimeError("LLM down")),
        )
    return {"costly": costly, "waiting": waiting}


def test_usage_page_shows_totals_prompts_models_and_rankings(client_as, world):
    html = client_as("viewer").get(reverse("ui:usage"), {"agent": "a1", "days": "30"}).content
    html = html.decode()
    assert 'data-prompt="consolidation v0"' in html and f"<code>{OFFLINE_MODEL}</code>" in html
    assert "1 failed" in html
    assert 'id="top-cost"' in html and f'data-scope-id="{world["costly"].id}"' in html
    backlog = html.split('id="top-backlog"')[1]
    assert f'data-scope-id="{world["waiting"].id}"' in backlog and "5 pending" in backlog


def test_dashboard_lists_the_costliest_scopes_and_largest_backlogs(client_as, world):
    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()
    assert "Costliest scopes, 7 days" in html and "Largest backlogs" in html
    assert "Costly" in html.split('id="top-cost"')[1]


def test_scope_page_shows_cost_and_health(client_as, world):
    client = client_as("viewer")
    text = client.get(reverse("ui:scope_detail", args=[world["waiting"].id])).content.decode()
    panel = text.split('id="scope-usage"')[1]
    assert "1 failed" in panel and "the oldest for" in panel and "never" in panel
    costly = client.get(reverse("ui:scope_detail", args=[world["costly"].id]))
    assert "nothing pending" in costly.content.decode().split('id="scope-usage"')[1]


def test_usage_page_with_a_bad_days_value_falls_back_to_7(client_as, world):
    response = client_as("viewer").get(reverse("ui:usage"), {"agent": "a1", "days": "abc"})
    assert response.status_code == 200 and "last 7 days" in response.content.decode()
