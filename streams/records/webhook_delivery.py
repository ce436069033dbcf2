"""Webhook delivery: claim the entries whose turn has come, then attempt each one.

Two steps so that the runner decides where the POSTs happen (issue 44). Claiming is
quick store work: oldest first; per hook and object only the oldest undelivered entry
(the later ones wait for it: order per object); a hook that failed in this pass is not
tried again in it; at most `room(agent_id)` entries per agent (the runner's per-agent
concurrency cap), the rest wait for the next pass. Each claim is a lease (`timeout`
+ 30 s), so no other runner takes the entry meanwhile. An attempt is one POST with
`X-Memory-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret>`
and a timeout; a 2xx marks it delivered; anything else is retried with exponential
backoff (30 s doubling, at most an hour apart) for a day, then `failed`. Each attempt
is kept on the entry (the delivery log). A hook made inactive stops: its waiting
entries are marked `stopped` when their turn comes.

`memory_admin.integrations.webhooks` runs the attempts on a pool of their own, so one agent's slow
receivers hold only that agent's share of it, never the periodic sweeps;
`webhook_deliver_due` is both steps in the caller's thread (tests, one-off passes).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.core.documents import utcnow
from streams.core.exceptions import InvalidInput
from streams.records.webhooks import (
    FIRST_BACKOFF_SECONDS,
    MAX_BACKOFF_SECONDS,
    MAX_RECORDED_ERROR,
    PASS_LIMIT,
    RETRY_FOR,
    Poster,
    webhook_url_check,
)
from streams.store import MemoryStore

LEASE_MARGIN_SECONDS = 30


@dataclass(frozen=True)
class Claimed:
    """One entry taken for one attempt, with its hook."""

    hook: dict[str, Any]
    entry: dict[str, Any]

    @property
    def agent_id(self) -> str:
        return str(self.entry["agent_id"])


def webhook_sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_claim_due(
    *,
    store: MemoryStore,
    timeout: float,
    room: Callable[[str], int] | None = None,
    now: datetime | None = None,
) -> tuple[list[Claimed], dict[str, int]]:
    """The entries taken for an attempt now, and counts (`stopped`, `waiting`)."""
    now = now or utcnow()
    counts = {"stopped": 0, "waiting": 0}
    blocked: set[tuple[ObjectId, str]] = set()
    hooks: dict[ObjectId, dict[str, Any] | None] = {}
    taken: dict[str, int] = {}
    claimed: list[Claimed] = []
    for entry in store.webhooks.undelivered(limit=PASS_LIMIT):
        key = (entry["webhook_id"], entry["object_key"])
        if key in blocked:
            counts["waiting"] += 1
            continue
        if entry["webhook_id"] not in hooks:
            hooks[entry["webhook_id"]] = store.webhooks.get(entry["webhook_id"])
        hook = hooks[entry["webhook_id"]]
        if hook is None or not hook["active"]:
            store.webhooks.record_attempt(
                entry["_id"],
                attempt=_attempt(now, None, "the webhook is inactive", 0),
                fields={"status": "stopped"},
            )
            counts["stopped"] += 1
            continue
        blocked.add(key)  # later entries of this object wait for this one
        agent_id = str(entry["agent_id"])
        if entry["next_attempt_at"] > now or (
            room is not None and taken.get(agent_id, 0) >= room(agent_id)
        ):
            counts["waiting"] += 1
            continue
        until = now + timedelta(seconds=timeout + LEASE_MARGIN_SECONDS)
        if not store.webhooks.claim(entry["_id"], now=now, until=until):
            continue  # another runner is delivering it
        taken[agent_id] = taken.get(agent_id, 0) + 1
        claimed.append(Claimed(hook=hook, entry=entry))
    return claimed, counts


def webhook_deliver_one(
    *,
    store: MemoryStore,
    claimed: Claimed,
    post: Poster,
    timeout: float,
    allow_private: bool,
    now: datetime | None = None,
) -> str:
    """One attempt of a claimed entry, recorded; `delivered`, `retrying` or `failed`."""
    entry = claimed.entry
    status, error, elapsed_ms = _attempt_once(
        claimed.hook, entry, post=post, timeout=timeout, allow_private=allow_private
    )
    now = now or utcnow()
    attempts = len(entry.get("attempts") or []) + 1
    if status is not None and 200 <= status < 300:
        outcome, fields = "delivered", {"status": "delivered", "delivered_at": now}
    else:
        backoff = min(FIRST_BACKOFF_SECONDS * 2 ** (attempts - 1), MAX_BACKOFF_SECONDS)
        next_at = now + timedelta(seconds=backoff)
        if next_at > entry["created_at"] + RETRY_FOR:
            outcome, fields = "failed", {"status": "failed"}
        else:
            outcome, fields = "retrying", {"next_attempt_at": next_at, "lease_until": now}
    store.webhooks.record_attempt(
        entry["_id"], attempt=_attempt(now, status, error, elapsed_ms), fields=fields
    )
    return outcome


def webhook_deliver_due(
    *,
    store: MemoryStore,
    post: Poster,
    timeout: float,
    allow_private: bool,
    now: datetime | None = None,
) -> dict[str, int]:
    """One pass in this thread: claim, then attempt each in turn; a hook that fails is
    not tried again in the pass (a dead endpoint costs one timeout a pass)."""
    claimed, waiting = webhook_claim_due(store=store, timeout=timeout, now=now)
    counts = {"delivered": 0, "retrying": 0, "failed": 0, **waiting}
    failing: set[ObjectId] = set()
    for item in claimed:
        if item.entry["webhook_id"] in failing:
            store.webhooks.release(item.entry["_id"], now=now or utcnow())
            counts["waiting"] += 1
            continue
        outcome = webhook_deliver_one(
            store=store,
            claimed=item,
            post=post,
            timeout=timeout,
            allow_private=allow_private,
            now=now,
        )
        counts[outcome] += 1
        if outcome != "delivered":
            failing.add(item.entry["webhook_id"])
    return counts


def _attempt_once(
    hook: dict[str, Any],
    entry: dict[str, Any],
    *,
    post: Poster,
    timeout: float,
    allow_private: bool,
) -> tuple[int | None, str | None, float]:
    body = entry["body"].encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "memory-admin-webhooks",
        "X-Memory-Event": entry["event"],
        "X-Memory-Delivery": str(entry["_id"]),
        "X-Memory-Signature": webhook_sign(hook["secret"], body),
    }
    started = time.perf_counter()
    try:
        # Checked again now (a name can be re-pointed), and the POST goes to an address
        # this check approved, not to a second resolution of the name.
        addresses = webhook_url_check(hook["url"], allow_private=allow_private)
        status = post(hook["url"], body, headers, timeout, addresses[0] if addresses else None)
        error = None if 200 <= status < 300 else f"answered {status}"
    except InvalidInput as exc:
        status, error = None, exc.message
    except Exception as exc:  # no answer: refused, reset, timed out
        status, error = None, f"{type(exc).__name__}: {exc}"[:MAX_RECORDED_ERROR]
    return status, error, round((time.perf_counter() - started) * 1000, 1)


def _attempt(at: datetime, status: int | None, error: str | None, ms: float) -> dict[str, Any]:
    return {"at": at, "status_code": status, "error": error, "ms": ms}
