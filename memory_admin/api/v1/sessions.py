"""Conversation ingest: an agent posts a session's messages; formation runs in the background."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Path, Router, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, IngestIn, IngestOut, JobIdOut, error_responses
from memory_admin.jobs.tasks import formation_settings
from memory_admin.stores import MemoryStore, get_store
from streams.actions.forget_requests import do_forget_request
from streams.actions.sessions import do_messages_ingest, do_session_form
from streams.core.exceptions import InvalidInput
from streams.memory.forget_requests import ForgetOutcome, forget_request_in
from streams.memory.formation import IncomingMessage

router = Router(tags=["sessions"])


@router.post(
    "/agents/{agent_id}/sessions/{session_id}/messages",
    auth=needs("write"),
    response={202: IngestOut, **error_responses(400, 401, 404, 413, 422, 429, 503)},
)
def ingest_messages(
    request: HttpRequest,
    agent_id: Path[ExternalId],
    session_id: Path[ExternalId],
    payload: IngestIn,
) -> Status[dict[str, Any]]:
    """Buffer the messages (ids already received count as duplicates and are ignored).

    A formation starts once the session's unformed messages reach the thresholds;
    its job id is in the answer. The answer never waits for the formation: it runs
    in a worker (with a broker) or a background thread of the server (embedded).

    Several people can talk in one session: a message's own `user_id`/`user_name`
    name its speaker (default: the request's). The request's `groups` are the
    speakers' groups. A message longer than MEMORY_MESSAGE_MAX_CHARS characters
    answers 422 naming it (`messages[i].content`).
    """
    require_agent(request, agent_id)
    _check_lengths(payload)
    store = get_store()
    result = do_messages_ingest(
        store=store,
        actor=api_actor(request),
        agent_id=agent_id,
        session_id=session_id,
        user_id=payload.user_id,
        user_name=payload.user_name,
        groups=_groups(payload),
        messages=[
            IncomingMessage(
                id=m.id,
                role=m.role,
                content=m.content,
                created_at=m.created_at,
                user_id=m.user_id,
                user_name=m.user_name,
            )
            for m in payload.messages
        ],
        settings=formation_settings(),
    )
    forget = None
    if result.accepted:
        forget = _forget_request(request, store, agent_id, session_id, payload)
    return Status(
        202,
        {
            # "forget what I said about X": what was proposed or deleted (null: no request).
            "forget_request": forget.to_dict() if forget is not None else None,
            "session_id": session_id,
            "accepted": result.accepted,
            "duplicates": result.duplicates,
            "unformed_messages": result.unformed_messages,
            "formation_job_id": result.formation_job.id if result.formation_job else None,
            # A forgotten user's late messages are not stored (erasure tombstones).
            "refused": result.refused,
        },
    )


def _forget_request(
    request: HttpRequest, store: MemoryStore, agent_id: str, session_id: str, payload: Any
) -> ForgetOutcome | None:
    asked = forget_request_in(
        [(m.role, m.user_id, m.content) for m in payload.messages], user_id=payload.user_id
    )
    if asked is None:
        return None
    return do_forget_request(
        store=store,
        actor=api_actor(request),
        agent_id=agent_id,
        user_id=payload.user_id,
        session_id=session_id,
        request=asked,
        mode=settings.MEMORY_FORGET_REQUESTS,
    )


@router.post(
    "/agents/{agent_id}/sessions/{session_id}/form",
    auth=needs("write"),
    response={202: JobIdOut, **error_responses(401, 404, 409, 422, 429, 503)},
)
def form_session(
    request: HttpRequest, agent_id: Path[ExternalId], session_id: Path[ExternalId]
) -> Status[dict[str, str]]:
    """Form now whatever is unformed (e.g. at the end of a conversation), even fewer
    messages than the automatic minimum (MEMORY_FORMATION_MIN_MESSAGES, which only
    applies to formations the server starts itself) — a single message forms.

    409 if nothing is unformed or a formation of the session is running. A failed
    formation holds nothing: `/form` right after it starts a new one. A formation whose
    worker died is taken over once its lease (MEMORY_JOB_STALE_SECONDS) lapses.
    """
    require_agent(request, agent_id)
    store = get_store()
    job = do_session_form(
        store=store,
        actor=api_actor(request),
        agent_id=agent_id,
        session_id=session_id,
        settings=formation_settings(),
    )
    return Status(202, {"job_id": job.id})


def _check_lengths(payload: IngestIn) -> None:
    """422 naming the first message over MEMORY_MESSAGE_MAX_CHARS characters."""
    limit = settings.MEMORY_MESSAGE_MAX_CHARS
    for index, message in enumerate(payload.messages):
        if len(message.content) > limit:
            raise InvalidInput(
                f"message {index} ({message.id}) has {len(message.content)} characters; "
                f"at most {limit} are accepted",
                details=[{"field": f"messages[{index}].content"}],
            )


def _groups(payload: IngestIn) -> list[dict[str, str]]:
    """The caller's groups, each id once, with its name when one was sent."""
    groups: dict[str, dict[str, str]] = {}
    for group in payload.groups:
        entry = groups.setdefault(group.id, {"id": group.id})
        if group.name:
            entry["name"] = group.name
    return list(groups.values())
