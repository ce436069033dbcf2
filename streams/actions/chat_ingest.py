"""The work of a `chat_ingest` job: the chat turn's messages go through the ingest action.

A job's work that performs an action belongs with the actions: the chat proxy's domain
half (`streams.context.chat`) builds the turn and its job, and imports no action.
"""

from __future__ import annotations

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.sessions import do_messages_ingest
from streams.context.chat import chat_turn_messages
from streams.jobs import JobRun
from streams.memory.formation import FormationSettings
from streams.store import MemoryStore


def chat_ingest_run(*, store: MemoryStore, run: JobRun, settings: FormationSettings) -> None:
    """The work of a `chat_ingest` job: buffer the turn; a due formation is a follow-up."""
    job = run.job
    payload = job.payload
    assert job.session_id is not None
    result = do_messages_ingest(
        store=store,
        actor=Actor.parse(payload.get("actor") or "api"),
        agent_id=job.agent_id,
        session_id=job.session_id,
        user_id=payload["user_id"],
        user_name=payload.get("user_name"),
        groups=[{k: v for k, v in g.items() if v} for g in payload.get("groups", [])],
        messages=chat_turn_messages(payload),
        settings=settings,
        follow_ups=run.follow_ups,
        context={"via": "chat", "call_id": payload.get("call_id")},
    )
    run.result = {
        "call_id": payload.get("call_id"),
        "accepted": result.accepted,
        "duplicates": result.duplicates,
        "formation_job_id": result.formation_job.id if result.formation_job else None,
        "refused": result.refused,
    }
    # The text now lives in the session's buffer (which forgetting a user deletes);
    # the finished job keeps no copy of it.
    store.jobs.unset_payload(ObjectId(job.id), "messages")
