"""`GET` and `PATCH /agents/{agent_id}`: an agent's counts and its settings.

The one setting so far is the chat proxy's memory tool (`memory_tool`: `off`, or
`search_memory` to offer the model that function tool; `docs/chat-proxy.md`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Path, Router, Schema

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, error_responses
from memory_admin.stores import get_store
from streams.actions.agents import do_agent_update
from streams.core.documents import Agent
from streams.selectors import agent_get

MemoryTool = Literal["off", "search_memory"]


class AgentOut(Schema):
    id: str
    scope_count: int
    observation_count: int
    pending_count: int
    created_at: datetime
    last_activity_at: datetime
    memory_tool: MemoryTool


class AgentPatchIn(Schema):
    memory_tool: MemoryTool


router = Router(tags=["agents"])


@router.get(
    "/agents/{agent_id}",
    auth=needs("read"),
    response={200: AgentOut, **error_responses(401, 404)},
)
def get_agent(request: HttpRequest, agent_id: Path[ExternalId]) -> Agent:
    require_agent(request, agent_id)
    return agent_get(store=get_store(), agent_id=agent_id)


@router.patch(
    "/agents/{agent_id}",
    auth=needs("write"),
    response={200: AgentOut, **error_responses(400, 401, 404, 422)},
)
def update_agent(request: HttpRequest, agent_id: Path[ExternalId], payload: AgentPatchIn) -> Agent:
    """Change the agent's settings: `memory_tool` (`off` | `search_memory`), audited."""
    require_agent(request, agent_id)
    return do_agent_update(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        memory_tool=payload.memory_tool,
    )
