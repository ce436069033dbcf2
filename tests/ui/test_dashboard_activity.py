"""The dashboard's chart, consolidation queue, failed jobs and per-agent columns."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from streams.core.documents import utcnow
from streams.jobs import job_create
from streams.memory.consolidation_jobs import consolidation_request
from tests.ui.helpers import HTMX, scope_with_history

pytestmark = pytest.mark.django_db


def test_chart_queue_failed_jobs_and_columns(client_as, store):
    scope = scope_with_history(store)
    queued = consolidation_request(store=store, scope=scope, trigger="ui", actor="ui:x")
    failed = job_create(store=store, kind="formation", agent_id="support-bot")
    store.jobs.finish(failed.id_oid, status="failed", now=utcnow(), error="ValueError: boom")

    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()

    assert '<svg class="chart"' in html
    assert "observations (3)" in html and "consolidations (2)" in html
    assert f"?job={queued.id}" in html  # the queue links to the scope following the job
    assert "ValueError: boom" in html
    row = html.split('data-agent-id="support-bot"')[1].split("</tr>")[0]
    assert 'data-col="consolidations">2<' in row
    assert ">1</a>" in row.split('data-col="failed"')[1]


def test_chart_of_another_agent_and_the_next_page_partial(client_as, store):
    scope_with_history(store, agent_id="a1")
    scope_with_history(store, agent_id="a2")
    client = client_as("viewer")
    html = client.get(reverse("ui:dashboard"), {"chart": "a2"}).content.decode()
    assert "Activity of a2" in html
    partial = client.get(reverse("ui:dashboard"), {"after": "a1"}, **HTMX).content.decode()
    assert partial.lstrip().startswith("<div") and "<svg" not in partial


def test_empty_instance_renders(client_as):
    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()
    assert "No agent to chart yet." in html and "No failed jobs." in html


def test_the_chart_opens_on_the_busiest_agent_not_the_first_by_name(client_as, store):
    """Issue 40: an agent made by hand (or by a typo) sorted first and got the chart."""
    scope_with_history(store, agent_id="support-bot")
    call_command("create_agent", "aaa-new-bot", stdout=StringIO())
    html = client_as("viewer").get(reverse("ui:dashboard")).content.decode()
    assert "Activity of support-bot" in html
    assert 'data-agent-id="aaa-new-bot"' in html  # still listed
