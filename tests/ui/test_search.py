"""Search inspector: the decision and its reason, ranked hits with terms, the context XML."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory_admin.ui.search import parse_groups
from tests.ui.helpers import HTMX, recall_search_params, scope_with_history

pytestmark = pytest.mark.django_db


def test_empty_form_page(client_as, store):
    scope_with_history(store)
    html = client_as("viewer").get(reverse("ui:search")).content.decode()
    assert "<html" in html and "Pick an agent, a user and a message" in html
    assert '<option value="support-bot" selected>' in html


def test_a_recall_message_fires_retrieval_and_shows_the_context(client_as, store):
    params = recall_search_params(store)
    client = client_as("viewer")
    html = client.get(reverse("ui:search"), params).content.decode()
    assert 'data-triggered="true"' in html and "recall phrase" in html
    assert "Gene uses Rust." in html and '<code class="term">rust</code>' in html
    # Why it ranks first: its rank after each stage.
    assert "terms #1 → people #1 → proximity #1 → neighbours #1 → dates #1" in html
    assert "&lt;MemoryContext&gt;" in html and "&lt;UserMemory user=&quot;Gene&quot;&gt;" in html
    assert "Eden Team" in html
    partial = client.get(reverse("ui:search"), params, **HTMX).content.decode()
    assert partial.lstrip().startswith('<section id="search-result"')


def test_a_plain_message_does_not_fire_and_says_why(client_as, store):
    gene = scope_with_history(store)
    html = (
        client_as("viewer")
        .get(
            reverse("ui:search"), {"agent": "support-bot", "user": gene.user_id, "message": "hello"}
        )
        .content.decode()
    )
    assert 'data-triggered="false"' in html and "Retrieval does not fire" in html


def test_without_a_user_only_shared_scopes_are_searched(client_as, store):
    scope_with_history(store)
    html = (
        client_as("viewer")
        .get(reverse("ui:search"), {"agent": "support-bot", "message": "what about Rust?"})
        .content.decode()
    )
    assert "No user given" in html and "Gene uses Rust." not in html


def test_a_missing_message_is_a_field_error(client_as, store):
    scope_with_history(store)
    html = (
        client_as("viewer")
        .get(reverse("ui:search"), {"agent": "support-bot", "message": ""}, **HTMX)
        .content.decode()
    )
    assert "This field is required." in html


def test_parse_groups():
    assert parse_groups(" g1=Eden Team, g2 ,, =x") == [("g1", "Eden Team"), ("g2", None)]
