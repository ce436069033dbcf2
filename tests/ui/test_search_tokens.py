"""The search inspector shows how many tokens each context section takes."""

from __future__ import annotations

from django.urls import reverse

from tests.factories import ObservationFactory, ScopeFactory
from tests.ui.helpers import scope_with_history


def test_the_inspector_lists_tokens_per_context_section(client_as, store):
    gene = scope_with_history(store)
    team = ScopeFactory.create(
        store=store, agent_id="support-bot", group=True, group_id="eden", display_name="Eden"
    )
    ObservationFactory.create(store=store, scope=team, content="The Eden team deploys on Fridays.")
    params = {
        "agent": "support-bot",
        "user": gene.user_id,
        "groups": "eden=Eden Team",
        "message": "What did I tell you about Rust?",
    }
    html = client_as("viewer").get(reverse("ui:search"), params).content.decode()
    table = html.split('id="context-tokens"')[1].split("</section>")[0]
    assert 'data-section="UserMemory" class="section-depth-0"' in table
    assert 'data-section="RecentObservations" class="section-depth-1"' in table
    assert "<progress" in table and "style=" not in table  # CSP: no inline styles
