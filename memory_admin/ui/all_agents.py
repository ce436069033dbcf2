"""The "All agents" choice of the lists (Scopes, Search, Usage): which agents a page reads.

`?agent=all` means every agent of the picker (the agents the person may see, at most the
picker's bound); an agent id that names no agent is a 404 page, never an empty page that
looks like an agent without data, nor a 500.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404

from memory_admin.ui.common import found
from streams.core.documents import Agent
from streams.selectors import agent_get

ALL_AGENTS = "all"
MAX_AGENT_CHARS = 128


def agents_chosen(
    store: Any, agents: list[Agent], value: str | None
) -> tuple[str | None, list[str]]:
    """(the picker's value, the agent ids to read): the first agent when none is asked for."""
    if not value:
        return (agents[0].id, [agents[0].id]) if agents else (None, [])
    if value == ALL_AGENTS:
        return ALL_AGENTS, [a.id for a in agents]
    if value not in {a.id for a in agents}:
        if len(value) > MAX_AGENT_CHARS:
            raise Http404("agent not found")
        found(agent_get, store=store, agent_id=value)  # the 404 page when none has that id
    return value, [value]
