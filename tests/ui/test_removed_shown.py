"""The Users page and the session page show a removed observation as removed, with who
and when, and never its words (issue 37, "one way out")."""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.actions.base import Actor
from streams.actions.observations import do_observation_delete
from streams.context.chat import chat_session_page
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.ui.helpers import HTMX

AGENT = "support-bot"
WORDS = "Gene keeps a spare key under the blue flowerpot."


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _delete(store: MemoryStore, observation_id: str) -> None:
    do_observation_delete(
        store=store,
        actor=Actor.ui("alice"),
        observation=store.observations.get(ObjectId(observation_id)),
    )


def test_the_users_page_shows_a_deleted_observation_as_removed_without_its_text(
    client_as, store: MemoryStore
) -> None:
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    kept = observation_add(store=store, scope=individual, content="Gene likes green tea.")
    gone = observation_add(store=store, scope=individual, content=WORDS)
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"))
    shared = observation_add(
        store=store,
        scope=group,
        content="Gene hides the flowerpot key.",
        related_user_ids=["u-gene"],
    )
    _delete(store, gone.id)
    _delete(store, shared.id)

    client = client_as("viewer")
    url = f"{reverse('ui:user_audit')}?agent={AGENT}&user=u-gene"
    for html in (
        client.get(url).content.decode(),
        client.get(url + "&part=observations", **HTMX).content.decode(),
        client.get(url + "&part=related", **HTMX).content.decode(),
    ):
        assert "flowerpot" not in html
    html = client.get(url).content.decode()
    assert "Gene likes green tea." in html and kept.id in html
    for removed in (gone, shared):
        assert f'data-observation-id="{removed.id}"' in html
    assert html.count("data-removed-by") == 2 and "ui:alice" in html
    assert "removed" in html


@pytest.mark.django_db  # the delete queues its follow-up job on commit
def test_the_session_page_never_prints_a_deleted_retrieved_observation(
    store: MemoryStore,
) -> None:
    """A chat call's retrieved list: a deleted observation is shown removed, its words not."""
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u-gene"))
    gone = observation_add(store=store, scope=scope, content=WORDS)
    store.chat_calls.collection.insert_one(_call(gone.id))
    _delete(store, gone.id)

    page = chat_session_page(store=store, agent_id=AGENT, session_id="s-1", cursor=None, limit=5)

    [item] = page.items[0]["retrieved_observations"]
    assert item["removed"] == "deleted" and item["removed_by"] == "ui:alice"
    assert item["removed_at"] is not None
    assert "flowerpot" not in repr(item)


def _call(observation_id: str) -> dict[str, Any]:
    from streams.core.documents import utcnow

    return {
        "_id": ObjectId(),
        "agent_id": AGENT,
        "session_id": "s-1",
        "user_id": "u-gene",
        "created_at": utcnow(),
        "memory": "injected",
        "context": "",
        "context_tokens": 0,
        "user_message": "where is the key?",
        "retrieval": {
            "triggered": True,
            "reason": "x",
            "observation_ids": [observation_id],
            "scores": [1.0],
        },
        "outcome": "answered",
        "model": "m",
        "upstream_model": "m",
    }


def test_the_users_page_shows_the_tombstone_and_only_an_admin_lifts_it_with_a_reason(
    client_as, store: MemoryStore
) -> None:
    from streams.core.documents import utcnow

    store.tombstones.put(agent_id=AGENT, user_id="u-gene", now=utcnow(), job_id=None)
    url = f"{reverse('ui:user_audit')}?agent={AGENT}&user=u-gene"
    lift = reverse("ui:tombstone_lift")
    form = {"agent": AGENT, "user": "u-gene", "reason": "asked to be remembered again"}

    viewer = client_as("viewer")
    html = viewer.get(url).content.decode()
    assert 'id="tombstone"' in html and "Lift the tombstone" not in html
    assert viewer.post(lift, form).status_code == 403
    admin = client_as("admin")
    assert "Lift the tombstone" in admin.get(url).content.decode()
    admin.post(lift, {**form, "reason": " "})  # no reason: refused, still there
    assert store.tombstones.covered(agent_id=AGENT, user_ids=["u-gene"]) == {"u-gene"}
    response = admin.post(lift, form)
    assert response.status_code == 302
    assert store.tombstones.covered(agent_id=AGENT, user_ids=["u-gene"]) == set()
    assert 'id="tombstone"' not in admin.get(url).content.decode()
