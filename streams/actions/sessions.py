"""Conversation actions: ingest a session's messages, form a session now."""

from __future__ import annotations

from typing import Any

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job
from streams.memory.formation import (
    COMMIT_ATTEMPTS,
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
    follow_ups: list[Job] | None = None,
    context: dict[str, Any] | None = None,
) -> IngestResult:
    """Buffer the messages; a formation is scheduled once the thresholds are reached.

    Inside a running job (the chat endpoint's ingest) the formation goes to the job's
    `follow_ups` instead, and `context` adds what the audit entry should say of the call.
    """

    def write(tx: ActionTx) -> IngestResult:
        result = messages_ingest(
            store=store,
            agent_id=agent_id,
            session_id=session_id,
            user_id=user_id,
            user_name=user_name,
            groups=groups,
            messages=messages,
            settings=settings,
            session=tx.session,
        )
        job = tx.schedule(result.formation_job)
        tx.audit(
            action="session.ingest",
            object_type="session",
            object_id=session_id,
            agent_id=agent_id,
            summary={
                "user_id": user_id,
                "accepted": result.accepted,
                "duplicates": result.duplicates,
                "refused": len(result.refused),
                "formation_job_id": job.id if job else None,
                **(context or {}),
            },
        )
        return result

    return run_action(store, actor, write, attempts=COMMIT_ATTEMPTS, follow_ups=follow_ups)


def do_session_form(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    session_id: str,
    settings: FormationSettings,
) -> Job:
    """Form now whatever is unformed (Conflict if nothing is, or a formation runs)."""

    def write(tx: ActionTx) -> Job:
        job = formation_request(
            store=store,
            agent_id=agent_id,
            session_id=session_id,
            trigger=actor.kind,
            settings=settings,
            session=tx.session,
        )
        tx.schedule(job)
        tx.audit(
            action="session.form",
            object_type="session",
            object_id=session_id,
            agent_id=agent_id,
            summary={"job_id": job.id},
        )
        return job

    return run_action(store, actor, write)
