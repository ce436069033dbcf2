"""The audit log: who changed what, when, with a before/after summary.

Every write through the API (actor `api:<key name>`), the UI (`ui:<username>`)
and the management commands (`cli`) records exactly one entry, written by the
domain action that does the write (`streams/actions`), so it is the same whichever
interface called it. Personal content
that is deleted or forgotten is summarised by `content_digest` (hash prefix and
length), never kept, so the log itself never holds what a user asked us to forget.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, Protocol

from bson import ObjectId
from bson.errors import InvalidId

from streams.core.documents import utcnow
from streams.core.documents_audit import AuditEntry
from streams.core.exceptions import InvalidInput
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

MAX_FILTER_CHARS = 200
# The filter that leads the index a page query uses, most selective first.
FILTER_FIELDS = ("object_id", "actor", "action", "agent_id")


class AuditSink(Protocol):
    """Where a service hands the audit entry of a write it makes for an action (issue 37:
    audit entries are written by actions and records only). An action passes its own
    (`ActionTx.audit`, bound to its transaction) or, for a system sweep or job, the one
    `streams.actions.base.system_audit` makes; a service never makes one. `session`
    and `writes` put the entry in the caller's transaction (and batch of writes)."""

    def __call__(
        self,
        *,
        action: str,
        object_type: str,
        object_id: str | None,
        agent_id: str | None = None,
        summary: dict[str, Any] | None = None,
        at: datetime | None = None,
        session: StoreSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None: ...


def audit_record(
    *,
    store: MemoryStore,
    actor: str,
    action: str,
    object_type: str,
    object_id: str | None,
    agent_id: str | None = None,
    summary: dict[str, Any] | None = None,
    at: datetime | None = None,
    session: StoreSession | None = None,
    writes: WriteBatch | None = None,
) -> None:
    """Record one write. `action` is "<object_type>.<verb>", e.g. "observation.update".
    With `session`, the entry is part of the write's own transaction (with `writes`, of
    its batch of writes)."""
    store.audit.insert(
        AuditEntry(
            actor=actor,
            action=action,
            object_type=object_type,
            object_id=object_id,
            agent_id=agent_id,
            summary=summary or {},
            at=at or utcnow(),
        ),
        session=session,
        writes=writes,
    )


def content_digest(text: str | None) -> dict[str, Any]:
    """What the log keeps of personal content: enough to match it, never the text."""
    if text is None:
        return {"sha256": None, "length": 0}
    return {"sha256": hashlib.sha256(text.encode()).hexdigest()[:16], "length": len(text)}


def audit_change(before: Any, after: Any) -> dict[str, Any]:
    """A before/after pair for a summary field."""
    return {"before": before, "after": after}


def audit_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Before/after of the fields that changed: numbers and flags as they are, text as a
    digest (texts may be personal, and the log must not keep what a user has us forget)."""

    def shown(value: Any) -> Any:
        return content_digest(value) if isinstance(value, str) else value

    return {
        name: audit_change(shown(before.get(name)), shown(value))
        for name, value in after.items()
        if before.get(name) != value
    }


def audit_page(
    *,
    store: MemoryStore,
    actor: str | None = None,
    object_id: str | None = None,
    action: str | None = None,
    agent_id: str | None = None,
    since: datetime | None = None,
    cursor: str | None = None,
    limit: int | None = None,
    now: datetime | None = None,
) -> Page[AuditEntry]:
    """The log newest first, filtered by any of actor, object, action, agent and a start time.

    A page may come back short with a cursor: it searched a bounded stretch of the
    log and says where to go on (see `streams.store.audit`).
    """
    limit = clamp_limit(limit)
    now = now or utcnow()
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)  # a time without a zone is read as UTC
    if since is not None and since > now:
        # Nothing is logged in the future (and ids cannot name times past 2106).
        return Page(items=[], next_cursor=None)
    filters = {"object_id": object_id, "actor": actor, "action": action, "agent_id": agent_id}
    for name, value in filters.items():
        if value is not None and (not value or len(value) > MAX_FILTER_CHARS):
            raise InvalidInput(
                f"{name} must be 1..{MAX_FILTER_CHARS} chars", details=[{"field": name}]
            )
    chosen = next((f for f in FILTER_FIELDS if filters[f] is not None), None)
    extra = {f: v for f, v in filters.items() if v is not None and f != chosen}
    window = store.audit.page(
        field=chosen,
        value=filters[chosen] if chosen else None,
        extra=extra,
        before=_cursor_before(cursor),
        since=since,
        now=now,
        limit=limit,
    )
    next_cursor = encode_cursor({"before": str(window.next_before)}) if window.next_before else None
    return Page(items=window.entries, next_cursor=next_cursor)


def _cursor_before(cursor: str | None) -> ObjectId | None:
    position = decode_cursor(cursor, required_keys=("before",))
    if position is None:
        return None
    try:
        return ObjectId(str(position["before"]))
    except InvalidId as exc:
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}]) from exc
