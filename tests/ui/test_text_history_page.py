"""The text history of an observation in the UI: admins see the earlier texts an edit
replaced (who, when); operators and viewers do not."""

from __future__ import annotations

from django.urls import reverse

from streams.actions.base import Actor
from streams.actions.observations import do_observation_update
from streams.memory.observations import observation_add, observation_get
from tests.factories import ScopeFactory


def test_admins_see_the_earlier_texts_of_an_edited_observation(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    observation = observation_add(store=store, scope=scope, content="The team uses Jira.")
    operator = client_as("operator")
    edit = reverse("ui:observation_edit", args=[observation.id])
    response = operator.post(edit, {"content": "The team uses Linear.", "private": ""})
    assert response.status_code == 302
    assert observation_get(store=store, observation_id=observation.id).content == (
        "The team uses Linear."
    )
    log = operator.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    url = reverse("ui:observation_history", args=[observation.id])
    assert url not in log  # the link is for admins
    assert operator.get(url).status_code in (302, 403)

    admin = client_as("admin")
    log = admin.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert url in log
    page = admin.get(url).content.decode()
    assert '<blockquote class="quote" id="current-text">The team uses Linear.</blockquote>' in page
    assert '<blockquote class="quote">The team uses Jira.</blockquote>' in page
    assert "replaced" in page and " by ui:" in page
    assert admin.get(url + "?cursor=garbage").status_code == 200  # a bad cursor: first page


def test_a_never_edited_observation_says_so(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    observation = observation_add(store=store, scope=scope, content="Standups at 9.")
    do_observation_update(
        store=store, actor=Actor.cli(), observation=observation, private=True
    )  # not a content edit
    page = client_as("admin").get(reverse("ui:observation_history", args=[observation.id]))
    assert 'id="no-history"' in page.content.decode()
