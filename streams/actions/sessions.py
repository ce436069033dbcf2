"""Conversation actions: ingest a session's messages, form a session now."""

from __future__ import annotations

from typing import Any

from streams.actions.base import Actor, record, schedule
from streams.documents import Job
from streams.formation import (
    FormationSettings,
    IncomingMessage,
    IngestResult,
    formation_request,
    messages_ingest,
)
from streams.store import MemoryStore, StoreSession


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
    follow_ups: list[Job] | None = None,
    context: dict[str, Any] | None = None,
) -> IngestResult:
    """Buffer the messages; a formation is scheduled once the thresholds are reached.

    Inside a running job (the chat endpoint's ingest) the formation goes to the job's
    `follow_ups` instead, and `context` adds what the audit entry should say of the call.
    """

    def audit(result: IngestResult, session: StoreSession) -> None:
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
                **(context or {}),
            },
            session=session,
        )

    result = messages_ingest(
        store=store,
        agent_id=agent_id,
        session_id=session_id,
        user_id=user_id,
        user_name=user_name,
        groups=groups,
        messages=messages,
        settings=settings,
        audit=audit,
    )
    job = result.formation_job
    jobs = [job] if job else []
    if follow_ups is None:
        schedule(jobs)
    else:
        follow_ups.extend(jobs)
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
