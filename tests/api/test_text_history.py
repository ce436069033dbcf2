"""An observation's text history: every content edit keeps the earlier text with who and
when; delete and forget-user purge it; the audit entry stays hash-only."""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from streams.records.audit import audit_page
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.streams.people.test_privacy import every_memory_document


def patch(api: Any, oid: str, text: str) -> Any:
    return api.patch(
        f"{API}/observations/{oid}", {"content": text}, content_type="application/json"
    )


def kept(store: Any, *ids: str) -> int:
    """Earlier texts stored for these observations (read by the history's own index)."""
    return sum(len(store.text_history.page(ObjectId(i), before=None, limit=50)) for i in ids)


def history(api: Any, oid: str, **query: Any) -> Any:
    return api.get(f"{API}/observations/{oid}/history", query)


@pytest.mark.parametrize("traits", [{}, {"group": True}, {"collective": True}, {"shard": True}])
def test_each_edit_keeps_the_earlier_text_with_actor_and_time(api, store, traits):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **traits)
    created = api.post(
        f"{API}/scopes/{scope.id}/observations",
        {"content": "Gene lives in Lisbon."},
        content_type="application/json",
    ).json()
    assert history(api, created["id"]).json() == {"items": [], "next_cursor": None}
    assert patch(api, created["id"], "Gene lives in Porto.").status_code == 200
    assert patch(api, created["id"], "Gene lives in Porto since 2024.").status_code == 200
    api.patch(
        f"{API}/observations/{created['id']}", {"private": True}, content_type="application/json"
    )

    body = history(api, created["id"]).json()
    assert [h["content"] for h in body["items"]] == [
        "Gene lives in Porto.",
        "Gene lives in Lisbon.",
    ]
    assert all(h["actor"].startswith("api:") for h in body["items"])
    assert body["items"][0]["replaced_at"] >= body["items"][1]["replaced_at"]

    first = history(api, created["id"], limit=1).json()
    assert [h["content"] for h in first["items"]] == ["Gene lives in Porto."]
    second = history(api, created["id"], limit=1, cursor=first["next_cursor"]).json()
    assert [h["content"] for h in second["items"]] == ["Gene lives in Lisbon."]
    assert second["next_cursor"] is None

    entries = audit_page(store=store, action="observation.update", limit=10).items
    assert entries and all("Lisbon" not in str(e.summary) for e in entries)  # digests only

    assert api.delete(f"{API}/observations/{created['id']}").status_code == 204
    assert history(api, created["id"]).json()["items"] == []
    assert kept(store, created["id"]) == 0


def test_history_bad_input_and_other_agents(api, limited_api, store):
    assert_error(history(api, str(ObjectId())), 404, "not_found")
    assert_error(history(api, "nope"), 404, "not_found")
    scope = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    created = observation_add(store=store, scope=scope, content="A fact.")
    assert_error(history(api, created.id, limit=0), 422, "validation_error")
    assert_error(history(api, created.id, cursor="!!"), 422, "validation_error")
    other = ScopeFactory.create(store=store, agent_id="agent-2", group=True)
    hidden = observation_add(store=store, scope=other, content="Another fact.")
    assert_error(history(limited_api, hidden.id), 404, "not_found")


def test_forget_user_purges_their_text_history(api, store, run_tasks, fake_openai):
    alice = str(ObjectId())
    own = ScopeFactory.create(store=store, agent_id="agent-1", user_id=alice)
    group = ScopeFactory.create(store=store, agent_id="agent-1", group=True)
    mine = observation_add(store=store, scope=own, content="Alice owns a kayak.")
    about = observation_add(
        store=store,
        scope=scope_get(store=store, scope_id=group.id),
        content="Alice paddles her kayak on Sundays.",
        related_user_ids=[alice],
    )
    patch(api, mine.id, "Alice owns two kayaks.")
    patch(api, about.id, "Alice paddles on Sundays.")
    assert kept(store, mine.id, about.id) == 2
    fake_openai.set_responder(lambda r: '{"observations": []}' if r.wants_json else "Nothing.")
    with run_tasks():
        response = api.delete(f"{API}/agents/agent-1/users/{alice}")
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "succeeded", job
    assert kept(store, mine.id, about.id) == 0
    assert "kayak" not in every_memory_document(store)
