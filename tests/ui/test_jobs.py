"""Jobs page: filters, pages, retry of a failed job (and of one that is not failed)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.core.documents import utcnow
from streams.jobs import job_create
from streams.records.audit import audit_record
from tests.factories import ObservationFactory, ScopeFactory
from tests.ui.helpers import HTMX

pytestmark = pytest.mark.django_db


def _failed_job(store, *, agent_id="a1", error="LLMError: upstream 502"):
    job = job_create(store=store, kind="consolidation", agent_id=agent_id, trigger="threshold")
    store.jobs.start(job.id_oid, now=utcnow(), stale_before=utcnow())
    store.jobs.finish(job.id_oid, status="failed", now=utcnow(), error=error, llm_calls=1)
    return job


def test_jobs_page_and_partial_show_status_errors_and_llm_calls(client_as, store):
    failed = _failed_job(store)
    job_create(store=store, kind="formation", agent_id="a2", session_id="s-1")
    client = client_as("viewer")
    html = client.get(reverse("ui:jobs")).content.decode()
    assert "<html" in html and f'data-job-id="{failed.id}"' in html
    assert "LLMError: upstream 502" in html and "Retry" not in html  # viewers cannot retry
    partial = client.get(reverse("ui:jobs"), {"status": "failed"}, **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="job-table"')
    assert "formation" not in partial
    by_agent = client.get(reverse("ui:jobs"), {"agent": "a2"}, **HTMX).content.decode()
    assert "formation" in by_agent and failed.id not in by_agent


def test_retry_requeues_a_failed_job(client_as, store, django_capture_on_commit_callbacks):
    failed = _failed_job(store)
    client = client_as("operator")
    assert "Retry" in client.get(reverse("ui:jobs")).content.decode()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("ui:job_retry", args=[failed.id]), follow=True)
    assert "The consolidation job was queued again." in response.content.decode()
    assert store.jobs.get(failed.id_oid).status == "queued"
    assert len(callbacks) == 1  # the task is sent once the request commits


def test_retrying_a_job_that_did_not_fail_is_a_message(client_as, store):
    job = job_create(store=store, kind="formation", agent_id="a1")
    response = client_as("operator").post(reverse("ui:job_retry", args=[job.id]), follow=True)
    assert "Only a failed job can be retried; this one is queued." in response.content.decode()


def test_retry_goes_back_only_to_a_local_page(client_as, store):
    failed = _failed_job(store)
    client = client_as("operator")
    away = client.post(reverse("ui:job_retry", args=[failed.id]), {"next": "https://evil.test/"})
    assert away["Location"] == reverse("ui:jobs")


def test_malformed_cursor_and_unknown_job(client_as):
    client = client_as("viewer")
    assert "malformed cursor" in client.get(reverse("ui:jobs"), {"cursor": "@@"}).content.decode()
    assert client.get(reverse("ui:job_status", args=["nope"])).status_code == 404


def test_jobs_show_scope_names_users_and_session_links(client_as, store):
    """Names where names exist: a job's scope by its label, a forget job's user, and its
    session as a link to the session page."""
    gene = ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene", display_name="Gene")
    shard = ScopeFactory.create(store=store, agent_id="a1", shard=True, name="feedback")
    job_create(store=store, kind="consolidation", agent_id="a1", scope_id=gene.id)
    job_create(store=store, kind="consolidation", agent_id="a1", scope_id=shard.id)
    job_create(store=store, kind="formation", agent_id="a1", session_id="sess-42")
    job_create(store=store, kind="forget_user", agent_id="a1", payload={"user_id": "u-gene"})
    formed = job_create(store=store, kind="formation", agent_id="a1", session_id="sess-43")
    store.jobs.start(formed.id_oid, now=utcnow(), stale_before=utcnow())
    store.jobs.finish(
        formed.id_oid,
        status="succeeded",
        now=utcnow(),
        result={"observations": 3, "scopes": {gene.id: 2, shard.id: 1}},
        llm_calls=1,
    )
    html = client_as("viewer").get(reverse("ui:jobs")).content.decode()
    assert "Gene (individual): 2; feedback (shard): 1" in html  # the result names its scopes
    assert gene.id not in html.split(f'data-job-id="{formed.id}"')[1].split("</tr>")[0]
    assert "Gene <span" in html and "(individual)" in html
    assert "feedback <span" in html and "(shard)" in html
    assert reverse("ui:session_detail", args=["a1", "sess-42"]) in html
    assert "?agent=a1&amp;user=u-gene" in html


def test_audit_names_scopes_and_links_sessions(client_as, store):
    gene = ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene", display_name="Gene")
    audit_record(
        store=store,
        actor="ui:olivia",
        action="scope.update",
        object_type="scope",
        object_id=gene.id,
        agent_id="a1",
    )
    audit_record(
        store=store,
        actor="api:bot",
        action="session.ingest",
        object_type="session",
        object_id="sess-42",
        agent_id="a1",
    )
    noted = ObservationFactory.create(store=store, scope=gene, content="Gene likes tea.")
    audit_record(
        store=store,
        actor="ui:olivia",
        action="observation.update",
        object_type="observation",
        object_id=noted.id,
        agent_id="a1",
    )
    audit_record(  # an id that is not one (an old entry, a hand-made one) is shown as is
        store=store,
        actor="cli",
        action="observation.delete",
        object_type="observation",
        object_id="not-an-id",
        agent_id="a1",
    )
    html = client_as("viewer").get(reverse("ui:audit_log")).content.decode()
    assert "<code>not-an-id</code>" in html
    assert ">Gene (individual)</a>" in html
    assert f'href="/scopes/{gene.id}/#obs-{noted.id}"' in html
    assert ">in Gene (individual)</a>" in html
    assert reverse("ui:session_detail", args=["a1", "sess-42"]) in html
