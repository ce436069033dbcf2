"""Forget leaves no copy behind (issue 37): jobs whose payload or result names the user
(the chat proxy's ingest holds their name, id and words) are purged, or, still waiting,
reduced to ids; a later run of such a job stores nothing of them (the tombstone)."""

from __future__ import annotations

import json

from bson import ObjectId

from streams.core.documents import utcnow
from streams.jobs import job_create
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.people.privacy import forget_user_request, forget_user_run
from streams.store import MemoryStore
from tests.task_mode import run_job

AGENT = "a1"
NAME = "Gene Wilder"
WORDS = "I keep the spare key under the blue flowerpot."


def _ingest_job(store: MemoryStore, user_id: str, name: str, words: str = WORDS) -> str:
    job = job_create(
        store=store,
        kind="chat_ingest",
        agent_id=AGENT,
        session_id="s-1",
        trigger="chat",
        payload={
            "call_id": str(ObjectId()),
            "actor": "api:k",
            "user_id": user_id,
            "user_name": name,
            "groups": [{"id": "g1", "name": "Eden"}],
            "messages": [{"id": "m-1", "role": "user", "content": words, "user_name": name}],
        },
    )
    return job.id


def test_forget_purges_finished_jobs_naming_the_user_and_reduces_waiting_ones(
    store: MemoryStore,
) -> None:
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "gene"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    finished = _ingest_job(store, "gene", NAME)
    store.jobs.finish(
        ObjectId(finished), status="succeeded", now=utcnow(), result={"user_name": NAME}
    )
    waiting = _ingest_job(store, "gene", NAME)
    other = _ingest_job(store, "ada", "Ada", "Ada likes coffee.")
    job = forget_user_request(store=store, agent_id=AGENT, user_id="gene", actor="t")

    run = run_job(store=store, job_id=job.id, work=lambda r: forget_user_run(store=store, run=r))

    assert store.jobs.get(ObjectId(finished)) is None
    reduced = store.db["memory_jobs"].find_one({"_id": ObjectId(waiting)})
    assert set(reduced["payload"]) == {"call_id", "actor", "user_id"}
    assert store.jobs.get(ObjectId(other)) is not None  # others' jobs stay whole
    left = json.dumps(
        list(store.db["memory_jobs"].find({"agent_id": AGENT}).limit(50)), default=str
    )
    assert NAME not in left and "flowerpot" not in left
    assert run.result["deleted"]["memory_jobs"] == 2
