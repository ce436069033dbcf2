"""History shows each version's fidelity ("drops 2 facts", linked to them), and the scope
page says why a consolidation answer was not committed (issues 38 and 39)."""

from __future__ import annotations

from bson import ObjectId
from django.urls import reverse

from streams.core.documents import Job, utcnow
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


def test_usage_shows_a_fidelity_rate_and_refusals_per_prompt_version(client_as, store):
    from streams.records.usage import usage_record

    store.agents.ensure("a1", now=utcnow())  # the Usage page names agents that exist (404 else)
    consolidation = Job(kind="consolidation", agent_id="a1", trigger="manual")
    ok = {"prompt_version": 2, "fidelity_weighed": 4, "fidelity_unstated": 1}
    usage_record(store=store, job=consolidation, results=[], result=ok, failed=False)
    refused = {"prompt_version": 2, "outcome": "refused", "refused": "echo"}
    usage_record(store=store, job=consolidation, results=[], result=refused, failed=True)

    page = client_as("viewer").get(reverse("ui:usage") + "?agent=a1").content.decode()

    row = page.split('data-prompt="consolidation v2"', 1)[1].split("</tr>", 1)[0]
    assert "1 refused" in row and "75%" in row
