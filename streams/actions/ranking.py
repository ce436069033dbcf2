"""Setting the lifecycle ranking switches of an agent or a scope
(`streams.search.ranking_settings`).

Each is one transaction with its audit entry (`agent.update`, `scope.update`: the settings
entries of each, with the switches before and after). A switch set to null is removed:
that level inherits again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Agent, Scope
from streams.core.exceptions import NotFound
from streams.search.ranking_settings import ranking_settings_check
from streams.store import MemoryStore


def _merged(current: Mapping[str, bool], changes: Mapping[str, Any]) -> dict[str, bool]:
    """The stored switches after `changes` (a null removes one)."""
    kept = {k: v for k, v in current.items() if k not in changes}
    return {**kept, **ranking_settings_check(changes)}


def do_agent_ranking_update(
    *, store: MemoryStore, actor: Actor, agent_id: str, changes: Mapping[str, Any]
) -> Agent:
    """Change the agent's switches named in `changes`; the others stay as they are."""
    ranking_settings_check(changes)

    def write(tx: ActionTx) -> Agent:
        agent = store.agents.get(agent_id, session=tx.session)
        if agent is None:
            raise NotFound(f"no agent {agent_id!r}")
        after = _merged(agent.ranking, changes)
        store.agents.set_ranking(agent_id, after, session=tx.session)
        tx.audit(
            action="agent.update",
            object_type="agent",
            object_id=agent_id,
            agent_id=agent_id,
            summary={"ranking": {"from": dict(agent.ranking), "to": after}},
        )
        agent.ranking = after
        return agent

    return run_action(store, actor, write)


def do_scope_ranking_update(
    *, store: MemoryStore, actor: Actor, scope: Scope, changes: Mapping[str, Any]
) -> Scope:
    """Change the scope's own switches named in `changes`; the others stay as they are."""
    ranking_settings_check(changes)

    def write(tx: ActionTx) -> Scope:
        fresh = store.scopes.get(ObjectId(scope.id), session=tx.session)
        if fresh is None:
            raise NotFound("scope not found")
        after = _merged(fresh.ranking, changes)
        store.scopes.update_fields(ObjectId(scope.id), {"ranking": after}, session=tx.session)
        tx.audit(
            action="scope.update",
            object_type="scope",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={"ranking": {"from": dict(fresh.ranking), "to": after}},
        )
        fresh.ranking = after
        return fresh

    return run_action(store, actor, write)
