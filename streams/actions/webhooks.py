"""Webhook actions: create, change and delete an agent's hook, each with its one audit entry
in the same transaction. The entry names the URL's host and the events, never the secret
(nor the URL's path or query, which may carry a token)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.records.webhooks import (
    webhook_create,
    webhook_delete,
    webhook_update,
    webhook_url_check,
)
from streams.store import MemoryStore


def do_webhook_create(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    url: str,
    events: list[str],
    allow_private: bool,
) -> dict[str, Any]:
    """The new hook with its `secret` (shown this once). The URL's host is resolved and
    checked before the transaction: a slow DNS answer never holds one open."""
    webhook_url_check(url, allow_private=allow_private)

    def write(tx: ActionTx) -> dict[str, Any]:
        hook = webhook_create(
            store=store,
            agent_id=agent_id,
            url=url,
            events=events,
            actor=str(actor),
            allow_private=allow_private,
            session=tx.session,
            resolved=True,
        )
        tx.audit(
            action="webhook.create",
            object_type="webhook",
            object_id=hook["id"],
            agent_id=agent_id,
            summary={"host": _host(hook["url"]), "events": hook["events"]},
        )
        return hook

    return run_action(store, actor, write)


def do_webhook_update(
    *,
    store: MemoryStore,
    actor: Actor,
    hook: dict[str, Any],
    active: bool | None = None,
    url: str | None = None,
    events: list[str] | None = None,
    allow_private: bool,
) -> dict[str, Any]:
    """The hook as changed; `active=False` stops deliveries. A new URL is resolved and
    checked before the transaction."""
    if url is not None:
        webhook_url_check(url, allow_private=allow_private)

    def write(tx: ActionTx) -> dict[str, Any]:
        updated = webhook_update(
            store=store,
            hook=hook,
            active=active,
            url=url,
            events=events,
            allow_private=allow_private,
            session=tx.session,
            resolved=True,
        )
        summary: dict[str, Any] = {}
        if active is not None:
            summary["active"] = {"before": hook["active"], "after": updated["active"]}
        if url is not None:
            summary["host"] = {"before": _host(hook["url"]), "after": _host(updated["url"])}
        if events is not None:
            summary["events"] = {"before": hook["events"], "after": updated["events"]}
        tx.audit(
            action="webhook.update",
            object_type="webhook",
            object_id=updated["id"],
            agent_id=hook["agent_id"],
            summary=summary,
        )
        return updated

    return run_action(store, actor, write)


def do_webhook_delete(*, store: MemoryStore, actor: Actor, hook: dict[str, Any]) -> None:
    """Remove the hook and its delivery log."""

    def write(tx: ActionTx) -> None:
        webhook_delete(store=store, hook=hook, session=tx.session)
        tx.audit(
            action="webhook.delete",
            object_type="webhook",
            object_id=str(hook["_id"]),
            agent_id=hook["agent_id"],
            summary={"host": _host(hook["url"]), "events": hook["events"]},
        )

    run_action(store, actor, write)


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None
