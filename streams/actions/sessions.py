"""Conversation actions: ingest a session's messages, form a session now."""

from __future__ import annotations

from streams.actions.base import Actor, record, schedule
from streams.documents import Job
from streams.formation import (
    FormationSettings,
    IncomingMessage,
    IngestResult,
    formation_request,
    messages_ingest,
)
from streams.store import MemoryStore


def do_messages_ingest(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    session_id: str,
    user_id: str,
    user_name: str | None,
    groups: list[dict[str, str]],
    messages: list[IncomingMessage],
    settings: FormationSettings,
) -> IngestResult:
    """Buffer the messages; a formation is scheduled once the thresholds are reached."""
    result = messages_ingest(
        store=store,
        agent_id=agent_id,
        session_id=session_id,
        user_id=user_id,
        user_name=user_name,
        groups=groups,
        messages=messages,
        settings=settings,
    )
    job = result.formation_job
    record(
        store=store,
        actor=actor,
        action="session.ingest",
        object_type="session",
        object_id=session_id,
        agent_id=agent_id,
        summary={
            "user_id": user_id,
            "accepted": result.accepted,
            "duplicates": result.duplicates,
            "formation_job_id": job.id if job else None,
        },
    )
    schedule([job] if job else [])
    return result


def do_session_form(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    session_id: str,
    settings: FormationSettings,
) -> Job:
    """Form now whatever is unformed (Conflict if nothing is, or a formation runs)."""
    job = formation_request(
        store=store,
        agent_id=agent_id,
        session_id=session_id,
        trigger=actor.kind,
        settings=settings,
    )
    record(
        store=store,
        actor=actor,
        action="session.form",
        object_type="session",
        object_id=session_id,
        agent_id=agent_id,
        summary={"job_id": job.id},
    )
    schedule([job])
    return job
