"""Webhooks: changes pushed to an agent's URL, signed, from an outbox, at least once.

- A hook is per agent: a URL, the events it wants, a secret (shown once, at creation),
  and `active`. The URL must be http(s); a host that resolves to a private, loopback,
  link-local or otherwise non-public address is refused (SSRF) unless `allow_private`
  (`MEMORY_WEBHOOK_ALLOW_PRIVATE=true`, for tests and single-host deployments). The
  same check runs again before each delivery (a name can be re-pointed), and the POST
  connects to an address that check approved (DNS rebinding). Callers resolve before
  their transaction: a slow DNS answer never holds one open.
- **Outbox.** The write path calls `webhook_outbox_add` inside the change's own
  transaction: one entry per active hook that wants the event, holding the exact body
  to send. A change that rolls back leaves no entry; a committed one cannot lose it.
- **Delivery** (`streams.records.webhook_delivery`, on threads of its own with a
  per-agent cap, never in a request or a sweep): signed, in order per object, retried
  with backoff for a day; each attempt kept on the entry (the delivery log, a week).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import SplitResult, urlsplit

from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Observation, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.pagination import Page, decode_cursor, encode_cursor
from streams.core.webhook_events import EVENTS, REMOVAL_FIELDS
from streams.records.addresses import address_is_public
from streams.store import MemoryStore, StoreSession
from streams.store.webhooks import MAX_HOOKS_PER_AGENT

logger = logging.getLogger("streams.webhooks")

MAX_URL_CHARS = 2_000
RETRY_FOR = timedelta(days=1)
LOG_KEPT = timedelta(days=7)  # the delivery log, then removed by a TTL index
FIRST_BACKOFF_SECONDS = 30
MAX_BACKOFF_SECONDS = 3_600
PASS_LIMIT = 500  # undelivered entries looked at per pass
MAX_RECORDED_ERROR = 300

# (url, raw body, headers, timeout seconds, the address to connect to or None to resolve
# the URL's host) -> the HTTP status; raises on no answer.
Poster = Callable[[str, bytes, dict[str, str], float, str | None], int]


# -- hooks -------------------------------------------------------------------------------


def webhook_url_check(url: str, *, allow_private: bool) -> list[str]:
    """InvalidInput unless `url` is http(s) to a public address (or `allow_private`); the
    addresses its host resolved to ([] with `allow_private`: not resolved).

    It resolves the name (DNS may be slow): callers run it before their transaction, and
    the delivery connects to an address it returned (a name re-pointed between the check
    and the connection, DNS rebinding, cannot reach a private address)."""
    parts = webhook_url_form(url)
    if allow_private:
        return []
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise InvalidInput("the URL's host does not resolve", details=[{"field": "url"}]) from exc
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address_is_public(address):
            raise InvalidInput(
                "the URL points to a private, loopback or reserved address "
                "(set MEMORY_WEBHOOK_ALLOW_PRIVATE=true to allow it)",
                details=[{"field": "url"}],
            )
        addresses.append(str(address))
    return list(dict.fromkeys(addresses))


def webhook_url_form(url: str) -> SplitResult:
    """The URL's parts, or InvalidInput unless it is http(s) with a host (no DNS: cheap)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises for a port that is not a number in range
    except ValueError as exc:
        raise InvalidInput("the URL is malformed", details=[{"field": "url"}]) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > MAX_URL_CHARS:
        raise InvalidInput("the URL must be http(s) with a host", details=[{"field": "url"}])
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise InvalidInput("the URL must not hold spaces", details=[{"field": "url"}])
    return parts


def webhook_create(
    *,
    store: MemoryStore,
    agent_id: str,
    url: str,
    events: list[str],
    actor: str,
    allow_private: bool,
    session: StoreSession | None = None,
    resolved: bool = False,
) -> dict[str, Any]:
    """The new hook, with its `secret` (the only time it is shown). `resolved`: the
    caller ran `webhook_url_check` already, before its transaction (only the URL's form
    is checked here)."""
    if resolved:
        webhook_url_form(url)
    else:
        webhook_url_check(url, allow_private=allow_private)
    _check_events(events)
    if store.webhooks.count_for_agent(agent_id, session=session) >= MAX_HOOKS_PER_AGENT:
        raise Conflict(f"an agent has at most {MAX_HOOKS_PER_AGENT} webhooks")
    doc = {
        "_id": ObjectId(),
        "agent_id": agent_id,
        "url": url,
        "events": list(dict.fromkeys(events)),
        "secret": "whsec_" + secrets.token_urlsafe(32),
        "active": True,
        "created_at": utcnow(),
        "created_by": actor,
    }
    store.webhooks.insert(doc, session=session)
    return {**webhook_view(doc), "secret": doc["secret"]}


def webhook_get(
    *, store: MemoryStore, webhook_id: str, agent_ids: frozenset[str] | None = None
) -> dict[str, Any]:
    doc = store.webhooks.get(require_object_id(webhook_id, what="webhook"))
    if doc is None or (agent_ids is not None and doc["agent_id"] not in agent_ids):
        raise NotFound("webhook not found")
    return doc


def webhook_update(
    *,
    store: MemoryStore,
    hook: dict[str, Any],
    active: bool | None = None,
    url: str | None = None,
    events: list[str] | None = None,
    allow_private: bool,
    session: StoreSession | None = None,
    resolved: bool = False,
) -> dict[str, Any]:
    """The hook as changed (`resolved`: as for `webhook_create`)."""
    fields: dict[str, Any] = {}
    if url is not None:
        if resolved:
            webhook_url_form(url)
        else:
            webhook_url_check(url, allow_private=allow_private)
        fields["url"] = url
    if events is not None:
        _check_events(events)
        fields["events"] = list(dict.fromkeys(events))
    if active is not None:
        fields["active"] = active
    if fields and not store.webhooks.update(hook["_id"], hook["agent_id"], fields, session=session):
        raise NotFound("webhook not found")
    return webhook_view({**hook, **fields})


def webhook_delete(
    *, store: MemoryStore, hook: dict[str, Any], session: StoreSession | None = None
) -> None:
    if not store.webhooks.delete(hook["_id"], hook["agent_id"], session=session):
        raise NotFound("webhook not found")


def webhooks_page(
    *, store: MemoryStore, agent_id: str, cursor: str | None, limit: int
) -> Page[dict[str, Any]]:
    position = decode_cursor(cursor, required_keys=("after",))
    after = _cursor_id(position, "after")
    docs = store.webhooks.page(agent_id=agent_id, after=after, limit=limit)
    items = [webhook_view(d) for d in docs]
    next_cursor = encode_cursor({"after": items[-1]["id"]}) if len(items) == limit else None
    return Page(items=items, next_cursor=next_cursor)


def webhook_deliveries_page(
    *, store: MemoryStore, hook: dict[str, Any], cursor: str | None, limit: int
) -> Page[dict[str, Any]]:
    position = decode_cursor(cursor, required_keys=("before",))
    before = _cursor_id(position, "before")
    docs = store.webhooks.log(webhook_id=hook["_id"], before=before, limit=limit)
    items = [_delivery_view(d) for d in docs]
    next_cursor = encode_cursor({"before": items[-1]["id"]}) if len(items) == limit else None
    return Page(items=items, next_cursor=next_cursor)


def webhook_view(doc: dict[str, Any]) -> dict[str, Any]:
    """A hook as readers see it: never its secret."""
    return {
        "id": str(doc["_id"]),
        "agent_id": doc["agent_id"],
        "url": doc["url"],
        "events": doc["events"],
        "active": doc["active"],
        "created_at": doc["created_at"],
    }


def _delivery_view(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(doc["_id"]),
        "webhook_id": str(doc["webhook_id"]),
        "event": doc["event"],
        "object_key": doc["object_key"],
        "status": doc["status"],
        "created_at": doc["created_at"],
        "next_attempt_at": doc.get("next_attempt_at"),
        "attempts": doc.get("attempts") or [],
    }


def _check_events(events: list[str]) -> None:
    unknown = [e for e in events if e not in EVENTS]
    if not events or unknown:
        raise InvalidInput(
            f"events: one or more of {', '.join(EVENTS)}",
            details=[{"field": "events", "unknown": unknown}],
        )


def _cursor_id(position: dict[str, Any] | None, key: str) -> ObjectId | None:
    if position is None:
        return None
    if not ObjectId.is_valid(position[key]):
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    return ObjectId(position[key])


# -- the outbox --------------------------------------------------------------------------


def webhook_outbox_add(
    *,
    store: MemoryStore,
    agent_id: str,
    event: str,
    objects: list[tuple[str, dict[str, Any]]],
    session: StoreSession | None,
    now: datetime | None = None,
) -> int:
    """Inside the change's transaction: one entry per active hook wanting `event` and per
    `(object key, data)`. Returns how many were written (0, with no hook: one cached read)."""
    hooks = [h for h in store.webhooks.active_for(agent_id) if event in h["events"]]
    if not hooks or not objects:
        return 0
    now = now or utcnow()
    docs = []
    kept = REMOVAL_FIELDS.get(event)
    if kept is not None:
        objects = [(key, {f: data.get(f) for f in kept}) for key, data in objects]
    for hook in hooks:
        for object_key, data in objects:
            delivery_id = ObjectId()
            body = {
                "id": str(delivery_id),
                "event": event,
                "agent_id": agent_id,
                "created_at": now.isoformat(),
                "data": data,
            }
            docs.append(
                {
                    "_id": delivery_id,
                    "webhook_id": hook["_id"],
                    "agent_id": agent_id,
                    "event": event,
                    "object_key": object_key,
                    "body": json.dumps(body, default=str, separators=(",", ":")),
                    "status": "pending",
                    "created_at": now,
                    "next_attempt_at": now,
                    "lease_until": now,
                    "purge_at": now + LOG_KEPT,
                    "attempts": [],
                }
            )
    store.webhooks.enqueue(docs, session=session)
    return len(docs)


def observation_data(observation: Observation) -> dict[str, Any]:
    """An observation as a delivery carries it (the API's Observation fields)."""
    return {
        "id": observation.id,
        "scope_id": observation.scope_id,
        "agent_id": observation.agent_id,
        "content": observation.content,
        "status": observation.status,
        "private": observation.private,
        "observed_at": observation.observed_at.isoformat(),
        "created_at": observation.created_at.isoformat(),
        "source_session_id": observation.source_session_id,
        "source_message_ids": list(observation.source_message_ids),
        "related_user_ids": list(observation.related_user_ids),
        "propagated_from": observation.propagated_from,
        "deleted": observation.deleted,
    }


def observation_removed_data(observation: Observation) -> dict[str, Any]:
    """A removed observation as its event carries it: ids and the time, no text."""
    deleted_at = observation.deleted_at.isoformat() if observation.deleted_at else None
    return {"id": observation.id, "scope_id": observation.scope_id, "deleted_at": deleted_at}


def observations_changed(
    *,
    store: MemoryStore,
    event: str,
    observations: list[Observation],
    session: StoreSession | None,
) -> None:
    shape = observation_removed_data if event in REMOVAL_FIELDS else observation_data
    if observations:
        webhook_outbox_add(
            store=store,
            agent_id=observations[0].agent_id,
            event=event,
            objects=[(f"observation:{o.id}", shape(o)) for o in observations],
            session=session,
        )


def consolidation_versioned(
    *, store: MemoryStore, entry: ConsolidationVersion, session: StoreSession | None
) -> None:
    data = {
        "scope_id": entry.scope_id,
        "agent_id": entry.agent_id,
        "version": entry.version,
        "text": entry.text,
        "trigger": entry.trigger,
        "actor": entry.actor,
        "absorbed_observation_ids": list(entry.absorbed_observation_ids),
        "created_at": entry.created_at.isoformat(),
    }
    webhook_outbox_add(
        store=store,
        agent_id=entry.agent_id,
        event="consolidation.version",
        objects=[(f"scope:{entry.scope_id}", data)],
        session=session,
    )
