"""The search inspector shows how many tokens each context section takes."""

from __future__ import annotations

from django.urls import reverse

from tests.ui.helpers import recall_search_params


def test_the_inspector_lists_tokens_per_context_section(client_as, store):
    params = recall_search_params(store)
    html = client_as("viewer").get(reverse("ui:search"), params).content.decode()
    table = html.split('id="context-tokens"')[1].split("</section>")[0]
    assert 'data-section="UserMemory" class="section-depth-0"' in table
    assert 'data-section="RecentObservations" class="section-depth-1"' in table
    assert "<progress" in table and "style=" not in table  # CSP: no inline styles
