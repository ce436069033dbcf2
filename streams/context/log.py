"""Reading the context log: what each context call gave the agent (`memory_context_calls`).

Selectors only; the records are written by `context_assemble` (behind the answer).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.context.tokens import context_sections
from streams.core.documents import utcnow
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.pagination import Page, decode_cursor, encode_cursor
from streams.store import MemoryStore


def context_calls_page(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str | None = None,
    session_id: str | None = None,
    since: datetime | None = None,
    cursor: str | None = None,
    limit: int = 50,
    now: datetime | None = None,
) -> Page[dict[str, Any]]:
    """An agent's logged calls (of a user, of a session), newest first, within the
    retention window (older records may wait for the TTL monitor: they are not shown)."""
    now = now or utcnow()
    window_start = now - timedelta(days=max(store.context_log_days, 0))
    since = max(since, window_start) if since is not None else window_start
    position = decode_cursor(cursor, required_keys=("before",))
    before = None
    if position is not None:
        if not ObjectId.is_valid(position["before"]):
            raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
        before = ObjectId(position["before"])
    docs = store.context_calls.page(
        agent_id=agent_id,
        user_id=user_id,
        session_id=session_id,
        since=since,
        before=before,
        limit=limit,
    )
    items = [context_call_view(d) for d in docs]
    next_cursor = encode_cursor({"before": items[-1]["id"]}) if len(items) == limit else None
    return Page(items=items, next_cursor=next_cursor)


def context_call_get(*, store: MemoryStore, agent_id: str, call_id: str) -> dict[str, Any]:
    if not ObjectId.is_valid(call_id):
        raise NotFound("context call not found")
    doc = store.context_calls.get(agent_id=agent_id, call_id=ObjectId(call_id))
    if doc is None:
        raise NotFound("context call not found")
    return context_call_view(doc)


def context_call_view(doc: dict[str, Any]) -> dict[str, Any]:
    """The record as readers see it: string id, tokens per section worked out from the XML."""
    xml = doc.get("xml") or ""
    return {
        "id": str(doc["_id"]),
        "agent_id": doc["agent_id"],
        "user_id": doc.get("user_id"),
        "session_id": doc.get("session_id"),
        "group_ids": doc.get("group_ids") or [],
        "source": doc.get("source") or "context",
        "caller": doc.get("caller") or "",
        "created_at": doc["created_at"],
        "message": doc.get("message") or "",
        "xml": xml,
        "tokens": doc.get("tokens") or 0,
        "sections": [
            {"name": s.name, "label": s.label, "depth": s.depth, "tokens": s.tokens}
            for s in context_sections(xml)
        ],
        "retrieval": doc.get("retrieval") or {"triggered": False, "reason": ""},
        "retrieved_ids": doc.get("retrieved_ids") or [],
        "search_ms": doc.get("search_ms"),
        "max_tokens": doc.get("max_tokens"),
        "dropped": doc.get("dropped") or [],
    }
