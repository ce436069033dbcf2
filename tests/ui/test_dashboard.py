"""The dashboard: counts from the store, the htmx partial, pagination, the provider flags."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memory_admin.ui import dashboard
from tests.factories import ObservationFactory, ScopeFactory

pytestmark = pytest.mark.django_db


def _row(html: str, agent_id: str) -> str:
    match = re.search(rf'<tr data-agent-id="{re.escape(agent_id)}">(.*?)</tr>', html, re.S)
    assert match, f"no row for {agent_id}"
    return match.group(1)


def _cell(row: str, column: str) -> str:
    match = re.search(rf'data-col="{column}">(.*?)</td>', row, re.S)
    assert match, f"no {column} cell"
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


def test_shows_each_agents_counts_from_the_store(client_as, store):
    first = ScopeFactory.create(store=store, agent_id="support-bot")
    ScopeFactory.create(store=store, agent_id="support-bot")
    for _ in range(3):
        ObservationFactory.create(store=store, scope=first)
    ScopeFactory.create(store=store, agent_id="sales-bot")

    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()

    support = _row(html, "support-bot")
    assert (_cell(support, "scopes"), _cell(support, "observations")) == ("2", "3")
    assert _cell(support, "pending") == "3"
    sales = _row(html, "sales-bot")
    assert [_cell(sales, c) for c in ("scopes", "observations", "pending")] == ["1", "0", "0"]
    assert html.index("sales-bot") < html.index("support-bot")  # agents in id order


def test_empty_store_says_how_to_get_data(client_as):
    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()
    assert "No agents yet" in html
    assert "python manage.py seed_demo" in html
    assert "<table" not in html


def test_shows_the_llm_provider_and_store_mode(client_as, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()
    assert "LLM: offline (rule-based)" in html
    assert "mongodb" in html  # the test settings point at a MongoDB URI
    assert settings.MONGODB_DB in html


def test_a_real_provider_is_not_flagged(client_as, settings):
    settings.MEMORY_LLM_PROVIDER = "openai"
    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()
    assert "LLM: openai" in html
    assert "rule-based demo provider" not in html


def test_htmx_request_gets_only_the_partial(client_as, store):
    ScopeFactory.create(store=store, agent_id="support-bot")
    response = client_as("viewer").get(reverse("ui:dashboard"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and "<h1>" not in html
    assert html.strip().startswith('<div id="agent-table"')
    assert 'hx-target="this" hx-swap="outerHTML"' in html
    assert "support-bot" in html
    assert "HX-Request" in response["Vary"]


def test_htmx_history_restore_gets_the_full_page(client_as):
    response = client_as("viewer").get(
        reverse("ui:dashboard"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in response.content.decode()


def test_pages_follow_the_after_cursor(client_as, store, monkeypatch):
    monkeypatch.setattr(dashboard, "PAGE_SIZE", 2)
    for agent_id in ("agent-a", "agent-b", "agent-c"):
        ScopeFactory.create(store=store, agent_id=agent_id)
    client = client_as("viewer")
    url = reverse("ui:dashboard")

    first = client.get(url).content.decode()
    assert "agent-a" in first and "agent-b" in first and "agent-c" not in first
    next_href = f'href="{url}?after=agent-b"'
    assert next_href in first
    assert f'hx-get="{url}?after=agent-b"' in first

    second = client.get(url, {"after": "agent-b"}).content.decode()
    # The rows are the next page; the chart stays on the busiest agent (a tie: by id).
    assert 'data-agent-id="agent-c"' in second and 'data-agent-id="agent-a"' not in second
    assert "?after=" not in second  # the last page has no next link
    assert "First page" in second

    partial = client.get(url, {"after": "agent-b"}, HTTP_HX_REQUEST="true").content.decode()
    assert "agent-c" in partial and "<html" not in partial


def test_a_page_past_the_end_offers_the_first_page(client_as, store):
    ScopeFactory.create(store=store, agent_id="agent-a")
    html = client_as("viewer").get(reverse("ui:dashboard"), {"after": "zzz"}).content.decode()
    assert "No agents after" in html and "No agents yet" not in html


def test_dashboard_refuses_post(client_as):
    assert client_as("viewer").post(reverse("ui:dashboard")).status_code == 405
