"""Observations get their vectors in the job that wrote them, never in the request; a
request's adds and older data are embedded by the periodic walk and the backfill command."""

from __future__ import annotations

from bson import ObjectId
from django.core.management import call_command

from streams.store import MemoryStore
from tests.api.conftest import API
from tests.factories import ObservationFactory, ScopeFactory

SESSION = f"{API}/agents/agent-1/sessions/s1"
MODEL = "text-embedding-3-small"


def _vectors(store: MemoryStore) -> list[dict]:
    return list(store.db["memory_observations"].find({"agent_id": "agent-1"}).limit(10))


def test_a_formation_job_embeds_what_it_wrote_and_the_request_embeds_nothing(
    api, settings, fake_openai, store, run_tasks
) -> None:
    settings.MEMORY_EMBEDDING_MODEL = MODEL
    settings.MEMORY_FORMATION_MIN_MESSAGES = 1
    settings.MEMORY_FORMATION_MAX_MESSAGES = 1
    fake_openai.reply_json(
        {"observations": [{"content": "Gene drinks green tea.", "scope": "individual:u1"}]}
    )
    body = {
        "user_id": "u1",
        "messages": [{"id": "m1", "role": "user", "content": "I drink green tea."}],
    }
    with run_tasks():
        answer = api.post(f"{SESSION}/messages", body, content_type="application/json").json()
        # The request has answered; its job runs at commit, so nothing embedded in it.
        assert fake_openai.embedding_requests == []
    job = api.get(f"{API}/jobs/{answer['formation_job_id']}").json()
    assert job["status"] == "succeeded", job
    assert job["result"]["embedded"] == 1
    [doc] = _vectors(store)
    assert doc["content"] == "Gene drinks green tea."
    assert doc["embedding_model"] == MODEL and len(doc["embedding"].as_vector().data) == 16
    assert [r.body["input"] for r in fake_openai.embedding_requests] == [["Gene drinks green tea."]]


def test_an_add_through_the_api_makes_no_embedding_call(api, settings, fake_openai, store):
    settings.MEMORY_EMBEDDING_MODEL = MODEL
    scope = ScopeFactory.create(store=store, user_id="u1")
    response = api.post(
        f"{API}/scopes/{scope.id}/observations",
        {"content": "Gene keeps bees."},
        content_type="application/json",
    )
    assert response.status_code in (200, 201), response.content
    assert fake_openai.embedding_requests == []
    assert all(d.get("embedding") is None for d in _vectors(store))


def test_the_backfill_command_embeds_every_old_observation_once(
    settings, fake_openai, store
) -> None:
    settings.MEMORY_EMBEDDING_MODEL = MODEL
    scope = ScopeFactory.create(store=store, user_id="u1")
    old = [
        ObservationFactory.create(store=store, scope=scope, content=f"Old note {i}.")
        for i in range(3)
    ]
    call_command("embed_observations")
    docs = {d["_id"]: d for d in _vectors(store)}
    assert all(docs[ObjectId(o.id)]["embedding_model"] == MODEL for o in old)
    calls = len(fake_openai.embedding_requests)
    call_command("embed_observations")  # idempotent: nothing left to embed
    assert len(fake_openai.embedding_requests) == calls
