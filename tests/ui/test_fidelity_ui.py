"""History shows each version's fidelity ("drops 2 facts", linked to them), and the scope
page says why a consolidation answer was not committed (issues 38 and 39)."""

from __future__ import annotations

from bson import ObjectId
from django.urls import reverse

from streams.core.documents import Job
from streams.memory.consolidation import consolidation_commit, consolidation_edit
from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from tests.factories import ScopeFactory


def test_history_says_how_many_facts_a_version_drops_and_links_them(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    consolidation_edit(
        store=store,
        scope=scope,
        text="The team deploys on Fridays. Oskar runs the Kubernetes cluster.",
        expected_version=0,
        actor="op",
    )
    lost = observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope.id), content="Ada joined in 2021."
    )
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        expected_version=1,
        text="The team deploys on Fridays.",
        absorbed_ids=[lost.id],
        trigger="threshold",
        actor=None,
    )

    page = client_as("viewer").get(reverse("ui:scope_detail", args=[scope.id])).content.decode()

    assert "drops 2 facts" in page
    assert reverse("ui:observation_history", args=[lost.id]) in page
    assert "Oskar runs the Kubernetes cluster." in page and "data-dropped" in page
    assert page.count("drops ") == 1  # v1 drops nothing


def test_the_scope_page_says_why_an_answer_was_refused(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    observation_add(store=store, scope=scope, content="The team deploys on Fridays.")
    job = Job(kind="consolidation", agent_id="a1", scope_id=scope.id, trigger="manual")
    store.jobs.insert(job)
    reason = "consolidation answer refused (echo): it repeats the prompt's instructions"
    store.jobs.finish(
        ObjectId(job.id),
        status="failed",
        now=job.created_at,
        error=f"AnswerRefused: {reason}",
        result={"outcome": "refused", "refused": "echo", "reason": reason},
    )

    page = client_as("viewer").get(reverse("ui:scope_detail", args=[scope.id])).content.decode()

    assert "refused (echo)" in page
    assert "pending observations stay pending, no version was written" in page
