"""Usage: an agent's LLM tokens and estimated cost over 1, 7 or 30 days, by prompt version
and by model, and its costliest scopes and largest backlogs (from the usage counters)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Schema
from ninja.params import Path

from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, error_responses
from memory_admin.stores import get_store
from streams.core.documents import utcnow
from streams.core.exceptions import InvalidInput
from streams.records.usage import (
    WINDOWS,
    Usage,
    agent_usage,
    top_scopes_by_backlog,
    top_scopes_by_cost,
)

router = Router(tags=["usage"])
TOP_SHOWN = 10


class UsageOut(Schema):
    jobs: int
    failed_jobs: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    estimated_cost_usd: float
    unpriced_tokens: int


class NamedUsageOut(UsageOut):
    name: str


class RankedScopeOut(Schema):
    scope_id: str
    estimated_cost_usd: float | None = None
    tokens: int | None = None
    pending: int | None = None


class AgentUsageOut(Schema):
    agent_id: str
    days: int
    total: UsageOut
    by_prompt: list[NamedUsageOut]
    by_model: list[NamedUsageOut]
    top_scopes_by_cost: list[RankedScopeOut]
    top_scopes_by_backlog: list[RankedScopeOut]


class UsageQuery(Schema):
    days: int = 7


def _out(usage: Usage, name: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {
        "jobs": usage.jobs,
        "failed_jobs": usage.failed,
        "llm_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "estimated_cost_usd": round(usage.cost_usd, 6),
        "unpriced_tokens": usage.unpriced_tokens,
    }
    if name is not None:
        out["name"] = name
    return out


@router.get(
    "/agents/{agent_id}/usage",
    auth=needs("read"),
    response={200: AgentUsageOut, **error_responses(401, 404, 422)},
)
def get_usage(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[UsageQuery]
) -> dict[str, object]:
    """Tokens in/out, estimated cost (MEMORY_LLM_PRICES), jobs and failed jobs over the last
    `days` UTC days. The scope rankings come from the kept per-day tops (50 scopes a day
    across agents), so an agent outside them may list fewer than ten."""
    require_agent(request, agent_id)
    if filters.days not in WINDOWS:
        raise InvalidInput("days must be 1, 7 or 30", details=[{"field": "days"}])
    store = get_store()
    today = utcnow().date()
    usage = agent_usage(store=store, agent_id=agent_id, days=filters.days, today=today)
    costly = top_scopes_by_cost(store=store, days=filters.days, today=today, limit=50)
    backlog = top_scopes_by_backlog(store=store, limit=50)
    return {
        "agent_id": agent_id,
        "days": usage.days,
        "total": _out(usage.total),
        "by_prompt": [_out(u, name) for name, u in usage.by_prompt],
        "by_model": [_out(u, name) for name, u in usage.by_model],
        "top_scopes_by_cost": [
            {"scope_id": r.scope_id, "estimated_cost_usd": r.value / 1_000_000, "tokens": r.tokens}
            for r in costly
            if r.agent_id == agent_id
        ][:TOP_SHOWN],
        "top_scopes_by_backlog": [
            {"scope_id": s.id, "pending": n} for s, n in backlog if s.agent_id == agent_id
        ][:TOP_SHOWN],
    }
