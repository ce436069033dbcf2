"""Export (a user, a scope) and import through the API; each is audited like any write.

An export writes nothing but its entry; an import writes every block and its entry in
one transaction (`run_action`)."""

from __future__ import annotations

from typing import Any

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Scope
from streams.people.exchange import IMPORT_ATTEMPTS, import_plan, import_write
from streams.people.export import scope_export, user_export_document
from streams.people.user_audit import check_user_ids
from streams.store import MemoryStore


def do_user_export_document(
    *, store: MemoryStore, actor: Actor, agent_id: str, user_id: str
) -> dict[str, Any]:
    """Everything kept about the user; reading someone's whole memory is itself audited."""
    check_user_ids(agent_id, user_id)
    data = user_export_document(store=store, agent_id=agent_id, user_id=user_id)
    run_action(
        store,
        actor,
        lambda tx: tx.audit(
            action="user.export",
            object_type="user",
            object_id=user_id,
            agent_id=agent_id,
            summary={"scopes": len(data["scopes"])},
        ),
    )
    return data


def do_scope_export(*, store: MemoryStore, actor: Actor, scope: Scope) -> dict[str, Any]:
    data = scope_export(store=store, scope=scope)
    run_action(
        store,
        actor,
        lambda tx: tx.audit(
            action="scope.export",
            object_type="scope",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={"observations": len(data["scopes"][0]["observations"])},
        ),
    )
    return data


def do_memory_import(
    *, store: MemoryStore, actor: Actor, agent_id: str, document: Any
) -> dict[str, Any]:
    """Import an export back (all items checked first; nothing stored when any is bad).
    The scopes it needs are made first; its blocks and its entry then commit together."""
    plan = import_plan(store=store, agent_id=agent_id, document=document)

    def write(tx: ActionTx) -> dict[str, Any]:
        result = import_write(store=store, plan=plan, session=tx.session, author=str(actor))
        tx.audit(
            action="agent.import",
            object_type="agent",
            object_id=agent_id,
            agent_id=agent_id,
            summary=dict(result),
        )
        return result

    return run_action(store, actor, write, attempts=IMPORT_ATTEMPTS)
