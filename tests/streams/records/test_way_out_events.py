"""Removal events carry ids and times, never the removed words (issue 37, "one way out"):
`observation.deleted` data is `{id, scope_id, deleted_at}`, `user.forgotten` data is
`{user_id, forgotten_at}`, whatever path writes them."""

from __future__ import annotations

import json

from bson import ObjectId

from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.records.webhooks import webhook_create, webhook_outbox_add
from streams.store import MemoryStore
from tests.task_mode import run_job

AGENT = "a1"
WORDS = "Gene keeps a spare key under the blue flowerpot."


def _hook(store: MemoryStore) -> None:
    webhook_create(
        store=store,
        agent_id=AGENT,
        url="http://127.0.0.1:9/hook",
        events=["observation.deleted", "user.forgotten"],
        actor="t",
        allow_private=True,
    )


def _bodies(store: MemoryStore, event: str) -> list[dict]:
    return [
        json.loads(d["body"]) for d in store.webhooks.undelivered(limit=50) if d["event"] == event
    ]


def test_an_observation_deleted_event_carries_ids_and_the_time_only(store: MemoryStore) -> None:
    _hook(store)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    added = observation_add(store=store, scope=scope, content=WORDS)
    observation_delete(store=store, observation=store.observations.get(ObjectId(added.id)))

    [body] = _bodies(store, "observation.deleted")
    assert set(body["data"]) == {"id", "scope_id", "deleted_at"}
    assert body["data"]["id"] == added.id and body["data"]["scope_id"] == scope.id
    assert "flowerpot" not in json.dumps(body)


def test_the_outbox_itself_reduces_a_removal_event_to_its_ids(store: MemoryStore) -> None:
    """A path that hands the outbox a full object still sends no removed words."""
    _hook(store)
    webhook_outbox_add(
        store=store,
        agent_id=AGENT,
        event="observation.deleted",
        objects=[("observation:x", {"id": "x", "scope_id": "s", "content": WORDS})],
        session=None,
    )
    [body] = _bodies(store, "observation.deleted")
    assert body["data"] == {"id": "x", "scope_id": "s", "deleted_at": None}


def test_a_user_forgotten_event_carries_the_user_id_and_the_time_only(store: MemoryStore) -> None:
    from streams.people.privacy import forget_user_request, forget_user_run

    _hook(store)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content=WORDS)
    job = forget_user_request(store=store, agent_id=AGENT, user_id="u1", actor="t")
    run_job(store=store, job_id=job.id, work=lambda r: forget_user_run(store=store, run=r))

    [body] = _bodies(store, "user.forgotten")
    assert set(body["data"]) == {"user_id", "forgotten_at"}
    assert body["data"]["user_id"] == "u1" and body["data"]["forgotten_at"]
    assert "flowerpot" not in json.dumps(body)
