"""The Users page finds a user by name or id prefix; an unknown id says so and offers
neither Export nor Forget."""

from __future__ import annotations

from django.urls import reverse

from tests.factories import ObservationFactory, ScopeFactory


def test_find_by_name_across_agents_links_to_each_user(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene", display_name="Gene")
    ScopeFactory.create(store=store, agent_id="a2", user_id="u-g2", display_name="Gene Kelly")
    html = client_as("viewer").get(reverse("ui:user_audit"), {"q": "gene"}).content.decode()
    assert 'data-user-id="u-gene" data-agent-id="a1"' in html
    assert 'data-user-id="u-g2" data-agent-id="a2"' in html
    assert "?agent=a1&amp;user=u-gene" in html


def test_find_within_one_agent(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene", display_name="Gene")
    ScopeFactory.create(store=store, agent_id="a2", user_id="u-g2", display_name="Gene Kelly")
    response = client_as("viewer").get(reverse("ui:user_audit"), {"q": "gene", "in": "a2"})
    html = response.content.decode()
    assert 'data-user-id="u-g2"' in html and 'data-user-id="u-gene"' not in html


def test_a_one_letter_search_says_what_it_needs(client_as):
    html = client_as("viewer").get(reverse("ui:user_audit"), {"q": "g"}).content.decode()
    assert "type 2 to 128 characters" in html


def test_an_unknown_id_says_so_and_offers_no_export_or_forget(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene", display_name="Gene")
    url = reverse("ui:user_audit")
    html = client_as("admin").get(url, {"agent": "a1", "user": "u-ge"}).content.decode()
    assert 'id="unknown-user"' in html and "remembers nothing" in html
    assert "Export JSON" not in html and "Forget this user" not in html
    assert 'data-user-id="u-gene"' in html  # the id's prefix is offered instead


def test_a_known_user_still_offers_export_and_forget(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", user_id="u-gene", display_name="Gene")
    ObservationFactory.create(store=store, scope=scope, content="Gene likes tea.")
    html = (
        client_as("admin")
        .get(reverse("ui:user_audit"), {"agent": "a1", "user": "u-gene"})
        .content.decode()
    )
    assert "Export JSON" in html and "Forget this user" in html
    assert 'id="unknown-user"' not in html
