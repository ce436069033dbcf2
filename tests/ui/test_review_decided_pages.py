"""The Review page's "Decided" list with Undo within MEMORY_REVIEW_UNDO_SECONDS, and its
"all agents" choice (issue 40)."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create

pytestmark = pytest.mark.django_db


def group_of(store, agent):
    scope, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(agent, "g1"), display_name=f"{agent} team"
    )
    return scope


@pytest.fixture
def held(store):
    return {
        agent: observation_add(
            store=store,
            scope=group_of(store, agent),
            content=f"Ops line of {agent} +1 415 555 26{n}1.",
        )
        for n, agent in enumerate(("agent-1", "agent-2"))
    }


def url(**query):
    return reverse("ui:review") + "?" + "&".join(f"{k}={v}" for k, v in query.items())


def test_a_decision_is_listed_as_decided_and_undone_from_there(client_as, store, held):
    client = client_as("operator")
    one = held["agent-1"]
    client.post(reverse("ui:review_decide", args=[one.id]), {"decision": "approve"})
    html = client.get(url(agent="agent-1", status="decided")).content.decode()
    assert f'id="decided-{one.id}"' in html and "approved" in html
    assert reverse("ui:review_undo", args=[one.id]) in html
    back = url(agent="agent-1", status="decided")
    page = client.post(reverse("ui:review_undo", args=[one.id]), {"next": back}, follow=True)
    assert "Undone: it waits for review again." in page.content.decode()
    assert f'id="decided-{one.id}"' not in page.content.decode()
    fresh = store.observations.get(ObjectId(one.id))
    assert fresh.status == "in_review" and "decision" not in fresh.review
    assert fresh.review["undone"]["by"].startswith("ui:")


def test_after_the_window_there_is_no_undo_button_and_a_post_says_why(
    client_as, settings, store, held
):
    client = client_as("operator")
    one = held["agent-1"]
    client.post(reverse("ui:review_decide", args=[one.id]), {"decision": "reject"})
    settings.MEMORY_REVIEW_UNDO_SECONDS = 0
    html = client.get(url(agent="agent-1", status="decided")).content.decode()
    assert reverse("ui:review_undo", args=[one.id]) not in html and "final" in html
    page = client.post(reverse("ui:review_undo", args=[one.id]), follow=True).content.decode()
    assert "can be undone for 0 seconds" in page
    assert store.observations.get(ObjectId(one.id)).status == "rejected"


def test_a_viewer_sees_decided_items_but_cannot_undo(client_as, held):
    operator = client_as("operator")
    operator.post(reverse("ui:review_decide", args=[held["agent-1"].id]), {"decision": "reject"})
    viewer = client_as("viewer")
    html = viewer.get(url(agent="agent-1", status="decided")).content.decode()
    assert (
        held["agent-1"].id in html
        and reverse("ui:review_undo", args=[held["agent-1"].id]) not in html
    )
    refused = viewer.post(reverse("ui:review_undo", args=[held["agent-1"].id]))
    assert refused.status_code == 403


def test_all_agents_lists_every_agents_queue_and_decisions_with_the_agent_named(client_as, held):
    client = client_as("operator")
    html = client.get(url(agent="all")).content.decode()
    assert held["agent-1"].id in html and held["agent-2"].id in html
    assert 'class="review-agent"' in html and "bulk-form" not in html
    assert '<option value="all" selected>All agents</option>' in html
    one = client.get(url(agent="agent-2")).content.decode()
    assert held["agent-2"].id in one and held["agent-1"].id not in one
    for o in held.values():
        client.post(reverse("ui:review_decide", args=[o.id]), {"decision": "reject"})
    decided = client.get(url(agent="all", status="decided")).content.decode()
    assert decided.index(held["agent-2"].id) < decided.index(held["agent-1"].id)
    assert decided.count('class="decided-agent"') == 2
