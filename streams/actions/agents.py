"""Agent actions: create an agent explicitly (`manage.py create_agent`, the Agents page).

Agents also come into being on their first conversation or scope; creating one by hand
is for a key or a page made before the agent has spoken, and it is the only way a
command that names an agent may add one (a typo must not make an empty agent).
"""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Agent, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.people.user_audit import MAX_EXTERNAL_ID
from streams.store import MemoryStore


def check_agent_id(agent_id: str) -> str:
    """The id as stored: 1..MAX_EXTERNAL_ID characters, no surrounding space."""
    value = (agent_id or "").strip()
    if not value or len(value) > MAX_EXTERNAL_ID or value != agent_id:
        raise InvalidInput(
            f"agent_id must be 1..{MAX_EXTERNAL_ID} characters without surrounding space",
            details=[{"field": "agent_id"}],
        )
    return value


def unknown_agents(*, store: MemoryStore, agent_ids: list[str]) -> list[str]:
    """Those of `agent_ids` the store has no agent for, in the order given."""
    return [a for a in agent_ids if store.agents.get(a) is None]


def do_agent_create(*, store: MemoryStore, actor: Actor, agent_id: str) -> Agent:
    """Create the agent (no scopes yet), audited; Conflict when it exists already."""
    check_agent_id(agent_id)

    def write(tx: ActionTx) -> Agent:
        if store.agents.get(agent_id, session=tx.session) is not None:
            raise Conflict(f"an agent {agent_id!r} exists already")
        store.agents.ensure(agent_id, now=utcnow(), session=tx.session)
        tx.audit(action="agent.create", object_type="agent", object_id=agent_id, agent_id=agent_id)
        agent = store.agents.get(agent_id, session=tx.session)
        if agent is None:  # ensure() wrote it in this transaction: only a store bug gets here
            raise RuntimeError(f"agent {agent_id!r} missing right after its insert")
        return agent

    return run_action(store, actor, write)


MEMORY_TOOL_CHOICES = ("off", "search_memory")


def do_agent_update(*, store: MemoryStore, actor: Actor, agent_id: str, memory_tool: str) -> Agent:
    """Change an agent's settings (the chat proxy's memory tool), audited with old and new."""
    if memory_tool not in MEMORY_TOOL_CHOICES:
        raise InvalidInput(
            f"memory_tool must be one of {', '.join(MEMORY_TOOL_CHOICES)}",
            details=[{"field": "memory_tool"}],
        )

    def write(tx: ActionTx) -> Agent:
        agent = store.agents.get(agent_id, session=tx.session)
        if agent is None:
            raise NotFound(f"no agent {agent_id!r}")
        store.agents.set_memory_tool(agent_id, memory_tool, session=tx.session)
        tx.audit(
            action="agent.update",
            object_type="agent",
            object_id=agent_id,
            agent_id=agent_id,
            summary={"memory_tool": {"from": agent.memory_tool, "to": memory_tool}},
        )
        updated = store.agents.get(agent_id, session=tx.session)
        if updated is None:  # not after the read above, in this transaction
            raise NotFound(f"no agent {agent_id!r}")
        return updated

    return run_action(store, actor, write)
