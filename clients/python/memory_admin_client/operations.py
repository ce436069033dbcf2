"""Every operation of /api/v1 the clients offer, as a `Call`: built once here, sent by
`MemoryClient` and `AsyncMemoryClient` alike (so the two cannot drift apart)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

from memory_admin_client import models as m
from memory_admin_client._calls import Call


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def new_client_id() -> str:
    """The key that makes an add safe to send again: the server stores it once."""
    return uuid.uuid4().hex


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: (v.isoformat() if isinstance(v, datetime) else v)
        for k, v in body.items()
        if v is not None
    }


def health() -> Call[m.Health]:
    return Call("GET", "/api/v1/health", m.Health, idempotent=True)


def ingest_messages(
    *,
    agent_id: str,
    session_id: str,
    user_id: str,
    messages: list[dict[str, Any]],
    user_name: str | None = None,
    groups: list[dict[str, Any]] | None = None,
) -> Call[m.IngestResult]:
    # Messages carry their ids: a re-send counts them as duplicates, stores nothing twice.
    body = _drop_none(
        {"user_id": user_id, "user_name": user_name, "groups": groups, "messages": messages}
    )
    path = f"/api/v1/agents/{_seg(agent_id)}/sessions/{_seg(session_id)}/messages"
    return Call("POST", path, m.IngestResult, json=body, idempotent=True)


def form_session(*, agent_id: str, session_id: str) -> Call[m.JobId]:
    path = f"/api/v1/agents/{_seg(agent_id)}/sessions/{_seg(session_id)}/form"
    return Call("POST", path, m.JobId)


def get_context(
    *,
    agent_id: str,
    user_id: str,
    message: str,
    user_name: str | None = None,
    groups: list[dict[str, Any]] | None = None,
    session_id: str | None = None,
    max_tokens: int | None = None,
    as_of: datetime | None = None,
) -> Call[m.Context]:
    body = _drop_none(
        {
            "user_id": user_id,
            "user_name": user_name,
            "groups": groups,
            "session_id": session_id,
            "message": message,
            "max_tokens": max_tokens,
            "as_of": as_of,
        }
    )
    # A read (it logs the call it served): sending it again is harmless.
    path = f"/api/v1/agents/{_seg(agent_id)}/context"
    return Call("POST", path, m.Context, json=body, idempotent=True)


def search(
    *,
    agent_id: str,
    q: str,
    user_id: str | None = None,
    group_id: str | None = None,
    scope_id: str | None = None,
    limit: int | None = None,
    min_score: float | None = None,
    observed_after: datetime | None = None,
    observed_before: datetime | None = None,
    include_superseded: bool | None = None,
) -> Call[m.SearchResult]:
    params = {
        "q": q,
        "user_id": user_id,
        "group_id": group_id,
        "scope_id": scope_id,
        "limit": limit,
        "min_score": min_score,
        "observed_after": observed_after,
        "observed_before": observed_before,
        "include_superseded": include_superseded,
    }
    path = f"/api/v1/agents/{_seg(agent_id)}/search"
    return Call("GET", path, m.SearchResult, params=params, idempotent=True)


def list_scopes(
    *,
    agent_id: str,
    scope_type: str | None = None,
    user_id: str | None = None,
    group_id: str | None = None,
    q: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.Scope]]:
    params = {
        "scope_type": scope_type,
        "user_id": user_id,
        "group_id": group_id,
        "q": q,
        "limit": limit,
        "cursor": cursor,
    }
    path = f"/api/v1/agents/{_seg(agent_id)}/scopes"
    return Call("GET", path, m.Page[m.Scope], params=params, idempotent=True)


def create_group_scope(
    *, agent_id: str, group_id: str, display_name: str | None = None
) -> Call[m.Scope]:
    body = _drop_none({"scope_type": "group", "group_id": group_id, "display_name": display_name})
    return Call("POST", f"/api/v1/agents/{_seg(agent_id)}/scopes", m.Scope, json=body)


def create_shard(
    *, agent_id: str, name: str, extraction_prompt: str | None = None
) -> Call[m.Scope]:
    body = _drop_none(
        {"scope_type": "collective", "name": name, "extraction_prompt": extraction_prompt}
    )
    return Call("POST", f"/api/v1/agents/{_seg(agent_id)}/scopes", m.Scope, json=body)


def get_scope(*, scope_id: str) -> Call[m.Scope]:
    return Call("GET", f"/api/v1/scopes/{_seg(scope_id)}", m.Scope, idempotent=True)


def update_scope(*, scope_id: str, changes: Mapping[str, Any]) -> Call[m.Scope]:
    """PATCH any settable field (`consolidation` needs `expected_version`)."""
    return Call(
        "PATCH", f"/api/v1/scopes/{_seg(scope_id)}", m.Scope, json=dict(changes), idempotent=True
    )


def set_pins(*, scope_id: str, pins: list[str]) -> Call[m.Scope]:
    path = f"/api/v1/scopes/{_seg(scope_id)}/pins"
    return Call("PUT", path, m.Scope, json={"pins": pins}, idempotent=True)


def list_consolidations(
    *, scope_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[m.Page[m.ConsolidationVersion]]:
    path = f"/api/v1/scopes/{_seg(scope_id)}/consolidations"
    return Call(
        "GET",
        path,
        m.Page[m.ConsolidationVersion],
        params={"limit": limit, "cursor": cursor},
        idempotent=True,
    )


def consolidate(*, scope_id: str) -> Call[m.JobId]:
    return Call("POST", f"/api/v1/scopes/{_seg(scope_id)}/consolidate", m.JobId)


def list_observations(
    *,
    scope_id: str,
    status: str | None = None,
    include_deleted: bool | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.Observation]]:
    params = {
        "status": status,
        "include_deleted": include_deleted,
        "limit": limit,
        "cursor": cursor,
    }
    path = f"/api/v1/scopes/{_seg(scope_id)}/observations"
    return Call("GET", path, m.Page[m.Observation], params=params, idempotent=True)


def add_observation(
    *,
    scope_id: str,
    content: str,
    client_id: str | None = None,
    private: bool = False,
    observed_at: datetime | None = None,
    expires_at: datetime | None = None,
) -> Call[m.Observation]:
    # The client_id is fixed here, once: every retry of this call sends the same one.
    body = _drop_none(
        {
            "content": content,
            "client_id": client_id or new_client_id(),
            "private": private,
            "observed_at": observed_at,
            "expires_at": expires_at,
        }
    )
    path = f"/api/v1/scopes/{_seg(scope_id)}/observations"
    return Call("POST", path, m.Observation, json=body, idempotent=True)


def add_observations(*, scope_id: str, items: Iterable[Mapping[str, Any]]) -> Call[m.BatchResult]:
    """A batch (one transaction); items without a `client_id` get one."""
    sent = [
        _drop_none({**item, "client_id": item.get("client_id") or new_client_id()})
        for item in items
    ]
    path = f"/api/v1/scopes/{_seg(scope_id)}/observations"
    return Call("POST", path, m.BatchResult, json={"items": sent}, idempotent=True)


def get_observation(*, observation_id: str) -> Call[m.Observation]:
    path = f"/api/v1/observations/{_seg(observation_id)}"
    return Call("GET", path, m.Observation, idempotent=True)


def update_observation(
    *,
    observation_id: str,
    content: str | None = None,
    private: bool | None = None,
) -> Call[m.Observation]:
    body = _drop_none({"content": content, "private": private})
    path = f"/api/v1/observations/{_seg(observation_id)}"
    return Call("PATCH", path, m.Observation, json=body, idempotent=True)


def delete_observation(*, observation_id: str) -> Call[Any]:
    path = f"/api/v1/observations/{_seg(observation_id)}"
    return Call("DELETE", path, None, idempotent=True)


def observation_feedback(
    *, observation_id: str, useful: bool, context_call_id: str | None = None
) -> Call[m.Observation]:
    body = _drop_none({"useful": useful, "context_call_id": context_call_id})
    path = f"/api/v1/observations/{_seg(observation_id)}/feedback"
    return Call("POST", path, m.Observation, json=body)


def supersede_observation(*, observation_id: str, by: str) -> Call[m.Observation]:
    """`observation_id` is replaced by the newer `by` (409 when either is not current)."""
    path = f"/api/v1/observations/{_seg(observation_id)}/supersede"
    return Call("POST", path, m.Observation, json={"by": by})


def unsupersede_observation(*, observation_id: str) -> Call[m.Observation]:
    """Undo a supersession: the observation is current again."""
    path = f"/api/v1/observations/{_seg(observation_id)}/unsupersede"
    return Call("POST", path, m.Observation, json={})


def observation_supersession(*, observation_id: str) -> Call[m.SupersessionChain]:
    """The chain through the observation, oldest first."""
    path = f"/api/v1/observations/{_seg(observation_id)}/supersession"
    return Call("GET", path, m.SupersessionChain, idempotent=True)


def review_observation(
    *, observation_id: str, decision: str, content: str | None = None, note: str | None = None
) -> Call[m.Observation]:
    body = _drop_none({"decision": decision, "content": content, "note": note})
    path = f"/api/v1/observations/{_seg(observation_id)}/review"
    return Call("POST", path, m.Observation, json=body)


def list_review(
    *,
    agent_id: str,
    scope_id: str | None = None,
    reason: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.Observation]]:
    params = {
        "scope_id": scope_id,
        "reason": reason,
        "status": status,
        "limit": limit,
        "cursor": cursor,
    }
    path = f"/api/v1/agents/{_seg(agent_id)}/review"
    return Call("GET", path, m.Page[m.Observation], params=params, idempotent=True)


def get_job(*, job_id: str) -> Call[m.Job]:
    return Call("GET", f"/api/v1/jobs/{_seg(job_id)}", m.Job, idempotent=True)


def list_jobs(
    *,
    status: str | None = None,
    kind: str | None = None,
    agent_id: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.Job]]:
    params = {
        "status": status,
        "kind": kind,
        "agent_id": agent_id,
        "limit": limit,
        "cursor": cursor,
    }
    return Call("GET", "/api/v1/jobs", m.Page[m.Job], params=params, idempotent=True)


def retry_job(*, job_id: str) -> Call[m.Job]:
    return Call("POST", f"/api/v1/jobs/{_seg(job_id)}/retry", m.Job)


def forget_user(*, agent_id: str, user_id: str) -> Call[m.JobId]:
    # Forgetting twice forgets the same: safe to send again.
    path = f"/api/v1/agents/{_seg(agent_id)}/users/{_seg(user_id)}"
    return Call("DELETE", path, m.JobId, idempotent=True)


def export_user(*, agent_id: str, user_id: str) -> Call[m.Raw]:
    path = f"/api/v1/agents/{_seg(agent_id)}/users/{_seg(user_id)}/export"
    return Call("GET", path, m.Raw, params={"format": "json"}, idempotent=True)


def list_audit(
    *,
    actor: str | None = None,
    object_id: str | None = None,
    action: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.AuditEntry]]:
    params = {
        "actor": actor,
        "object_id": object_id,
        "action": action,
        "since": since,
        "limit": limit,
        "cursor": cursor,
    }
    return Call("GET", "/api/v1/audit", m.Page[m.AuditEntry], params=params, idempotent=True)


def list_context_calls(
    *,
    agent_id: str,
    user_id: str | None = None,
    session_id: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.ContextCall]]:
    params = {
        "user_id": user_id,
        "session_id": session_id,
        "since": since,
        "limit": limit,
        "cursor": cursor,
    }
    path = f"/api/v1/agents/{_seg(agent_id)}/context-calls"
    return Call("GET", path, m.Page[m.ContextCall], params=params, idempotent=True)
