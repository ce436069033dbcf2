"""Cost and health: `/usage/` (an agent's tokens and estimated cost over 1/7/30 days, by
prompt version and model; the costliest scopes and the largest backlogs), and the
small panels the dashboard and the scope page show. Reads only the usage counters."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.all_agents import ALL_AGENTS, agents_chosen
from memory_admin.ui.common import param
from memory_admin.ui.roles import Role, role_required
from streams.context.retrieval_health import retrieval_health
from streams.core.documents import Scope, utcnow
from streams.records.usage import (
    WINDOWS,
    Usage,
    agent_usage,
    scope_health,
    scope_usage,
    top_scopes_by_backlog,
    top_scopes_by_cost,
    usage_by_agent,
)
from streams.selectors import agents_page, scopes_by_ids

AGENT_CHOICES = 200
TOP_SHOWN = 10


def ranked_scopes(store: MemoryStore, *, days: int, agent_id: str | None = None) -> dict[str, Any]:
    """The costliest scopes over `days` and the largest backlogs, with their scopes (one
    `_id` list read each), optionally for one agent."""
    costly = top_scopes_by_cost(store=store, days=days, today=utcnow().date(), limit=50)
    if agent_id:
        costly = [r for r in costly if r.agent_id == agent_id]
    costly = costly[:TOP_SHOWN]
    found = scopes_by_ids(store=store, scope_ids=[r.scope_id for r in costly])
    scopes = {s.id: s for s in found}
    backlog = top_scopes_by_backlog(store=store, limit=50)
    if agent_id:
        backlog = [(s, n) for s, n in backlog if s.agent_id == agent_id]
    return {
        "top_cost": [
            {"scope": scopes[r.scope_id], "cost_usd": r.value / 1_000_000, "tokens": r.tokens}
            for r in costly
            if r.scope_id in scopes
        ],
        "top_backlog": backlog[:TOP_SHOWN],
        "top_days": days,
    }


def scope_usage_context(store: MemoryStore, scope: Scope) -> dict[str, Any]:
    """The scope page's "Cost and health" panel."""
    windows = scope_usage(store=store, scope_id=scope.id, today=utcnow().date())
    return {
        "usage_windows": [(days, windows[days]) for days in WINDOWS],
        "health": scope_health(store=store, scope=scope, usage=windows),
    }


@require_GET
@role_required(Role.VIEWER)
def usage_page(request: HttpRequest) -> HttpResponse:
    store = get_store()
    agents = agents_page(store=store, limit=AGENT_CHOICES)
    agent_id, agent_ids = agents_chosen(store, agents, param(request, "agent"))
    days = int(param(request, "days") or 7) if (param(request, "days") or "7").isdigit() else 7
    days = days if days in WINDOWS else 7
    context: dict[str, Any] = {"agents": agents, "agent_id": agent_id, "days": days}
    context["windows"] = WINDOWS
    if agent_id == ALL_AGENTS:
        context.update(_all_agents(store, agent_ids=agent_ids, days=days))
        return render(request, "ui/usage.html", context)
    context["usage"] = (
        agent_usage(store=store, agent_id=agent_id, days=days, today=utcnow().date())
        if agent_id
        else None
    )
    context.update(ranked_scopes(store, days=days, agent_id=agent_id))
    context["health"] = (
        retrieval_health(store=store, agent_id=agent_id, days=days) if agent_id else None
    )
    return render(request, "ui/usage.html", context)


def _all_agents(store: MemoryStore, *, agent_ids: list[str], days: int) -> dict[str, Any]:
    """One row per agent and their sum; the rankings are across agents already."""
    rows = usage_by_agent(store=store, agent_ids=agent_ids, days=days, today=utcnow().date())
    total = Usage()
    for _, usage in rows:
        total.add(asdict(usage))
    return {
        "all_agents": True,
        "by_agent": rows,
        "usage": {"total": total},
        **ranked_scopes(store, days=days),
    }
