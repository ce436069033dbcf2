"""The agent's limits and models: its extraction model and its scope-type defaults.

Apart from `do_agent_update` (the chat proxy's memory tool) so the two kinds of agent
settings change and are audited on their own; `PATCH /agents/{id}` calls what it is sent.
"""

from __future__ import annotations

from typing import Any

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Agent
from streams.core.exceptions import NotFound
from streams.memory.scope_limits import (
    model_checked,
    scope_defaults_checked,
    scope_defaults_merged,
)
from streams.store import MemoryStore

UNSET = object()


def do_agent_limits_update(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    extraction_model: Any = UNSET,
    scope_defaults: Any = UNSET,
) -> Agent:
    """Set the agent's extraction model (None: the code's) and merge `scope_defaults`
    ({kind: {field: value}}; a None value removes that default), audited old and new."""
    fields: dict[str, Any] = {}
    if extraction_model is not UNSET:
        fields["extraction_model"] = model_checked(
            store=store, field="extraction_model", value=extraction_model
        )
    patch = (
        None
        if scope_defaults is UNSET
        else scope_defaults_checked(store=store, value=scope_defaults)
    )

    def write(tx: ActionTx) -> Agent:
        agent = store.agents.get(agent_id, session=tx.session)
        if agent is None:
            raise NotFound(f"no agent {agent_id!r}")
        if patch is not None:
            fields["scope_defaults"] = scope_defaults_merged(agent.scope_defaults, patch) or None
        store.agents.set_limits(agent_id, fields, session=tx.session)
        tx.audit(
            action="agent.limits",
            object_type="agent",
            object_id=agent_id,
            agent_id=agent_id,
            summary={
                name: {"from": getattr(agent, name) or None, "to": value}
                for name, value in fields.items()
            },
        )
        updated = store.agents.get(agent_id, session=tx.session)
        if updated is None:  # not after the read above, in this transaction
            raise NotFound(f"no agent {agent_id!r}")
        return updated

    return run_action(store, actor, write)
