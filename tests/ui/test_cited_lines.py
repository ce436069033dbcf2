"""The Users page and the observation log show the lines an observation cites: text,
speaker and time, for each speaker's own line only (two people, real ObjectIds)."""

from __future__ import annotations

from urllib.parse import urlencode

from bson import ObjectId
from django.urls import reverse

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.streams.memory.test_speakers import form, say
from tests.streams.people.test_privacy import AGENT


def test_cited_lines_on_the_users_page_and_in_the_log(client_as, store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    alice, bob = str(ObjectId()), str(ObjectId())
    m_alice, m_bob = str(ObjectId()), str(ObjectId())
    say(store, alice, [(m_alice, alice, "I am allergic to peanuts.")])
    say(store, alice, [(m_bob, bob, "I live in Lisbon since 2020.")])
    form(store)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, alice))
    observation_add(store=store, scope=scope, content="Alice likes quiet rooms.")  # by hand

    client = client_as("viewer")
    query = urlencode({"agent": AGENT, "user": alice})
    page = client.get(f"{reverse('ui:user_audit')}?{query}").content.decode()
    assert f'<li data-message-id="{m_alice}">' in page
    assert "I am allergic to peanuts." in page
    assert "Lisbon" not in page  # Bob's line is not cited by Alice's observation
    assert "added by hand" in page

    log = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert f'<li data-message-id="{m_alice}"><span class="cited-who">{alice.title()}</span>' in log
    assert "<q>I am allergic to peanuts.</q>" in log
    assert m_bob not in log

    bob_scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, bob))
    bob_log = client.get(reverse("ui:scope_detail", args=[bob_scope.id])).content.decode()
    assert f'<li data-message-id="{m_bob}">' in bob_log and m_alice not in bob_log
