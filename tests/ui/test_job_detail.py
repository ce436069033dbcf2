"""The job detail page, job results as labelled values, and the scope header partial."""

from __future__ import annotations

from django.urls import reverse

from memory_admin.templatetags.labelled import labelled
from streams.core.documents import utcnow
from streams.jobs import job_create
from tests.factories import ScopeFactory
from tests.ui.helpers import HTMX, scope_with_history


def test_labelled_turns_a_result_dict_into_words():
    rows = labelled({"version": 3, "absorbed": 2, "reconsolidated_scopes": [], "ok": True})
    assert rows == [
        ("New version", "3"),
        ("Observations absorbed", "2"),
        ("Reconsolidated scopes", "none"),
        ("Ok", "yes"),
    ]
    nested = dict(labelled({"deleted": {"memory_observations": 4, "memory_jobs": 1}}))
    assert nested["Deleted"] == "memory observations: 4; memory jobs: 1"
    assert labelled(None) == []


def test_job_detail_shows_facts_and_result_as_labelled_values(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    job = job_create(
        store=store, kind="consolidation", agent_id="a1", scope_id=scope.id, actor="ui:olivia"
    )
    store.jobs.finish(
        job.id_oid, status="succeeded", now=utcnow(), result={"version": 4, "absorbed": 3}
    )
    html = client_as("viewer").get(reverse("ui:job_detail", args=[job.id])).content.decode()
    assert "<dt>New version</dt><dd>4</dd>" in html
    assert "<dt>Observations absorbed</dt><dd>3</dd>" in html
    assert "ui:olivia" in html and "{&#x27;version" not in html and "{'version" not in html
    assert "?a=3&b=4" in html  # the diff of the new version


def test_job_table_links_to_the_detail_and_labels_results(client_as, store):
    job = job_create(store=store, kind="consolidation", agent_id="a1")
    store.jobs.finish(job.id_oid, status="succeeded", now=utcnow(), result={"note": "no-op"})
    html = client_as("viewer").get(reverse("ui:jobs")).content.decode()
    assert reverse("ui:job_detail", args=[job.id]) in html
    assert "<dt>Note</dt><dd>no-op</dd>" in html


def test_unknown_or_malformed_job_is_404(client_as):
    client = client_as("viewer")
    assert client.get(reverse("ui:job_detail", args=["0" * 24])).status_code == 404
    assert client.get(reverse("ui:job_detail", args=["nope"])).status_code == 404


def test_failed_job_detail_offers_retry_to_operators_only(client_as, store):
    job = job_create(store=store, kind="consolidation", agent_id="a1")
    store.jobs.finish(job.id_oid, status="failed", now=utcnow(), error="LLM timed out")
    url = reverse("ui:job_detail", args=[job.id])
    assert "Retry" not in client_as("viewer").get(url).content.decode()


def test_scope_head_partial_shows_the_fresh_pending_count(client_as, store):
    scope = scope_with_history(store)
    client = client_as("operator")
    url = reverse("ui:scope_consolidation", args=[scope.id]) + "?part=head"
    html = client.get(url, **HTMX).content.decode()
    assert html.lstrip().startswith('<div class="page-head" id="scope-head"')
    assert '<span id="head-pending">3</span>' in html
    assert 'id="consolidate-button" disabled' not in html
    job_create(store=store, kind="consolidation", agent_id=scope.agent_id, scope_id=scope.id)
    html = client.get(url, **HTMX).content.decode()
    assert 'id="consolidate-button" disabled' in html  # a job is queued already
