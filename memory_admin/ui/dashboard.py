"""The dashboard: what each agent holds, its activity over time, the consolidation queue,
failed jobs, and which store and LLM provider this instance runs on."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory_admin.stores import MemoryStore, get_store, store_mode
from memory_admin.ui.chart import activity_chart
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from memory_admin.ui.usage import ranked_scopes
from streams.context.retrieval_health import retrieval_health
from streams.core.documents import Agent, Job, utcnow
from streams.guard.review import review_counts_by_agent
from streams.records.activity import activity_days
from streams.selectors import (
    agent_day_counters,
    agents_page,
    busiest_agent,
    failed_job_counts,
    jobs_newest,
)

PAGE_SIZE = 25
MAX_CURSOR_CHARS = 200  # agent ids are short; a longer `after` is not one of ours
CHART_DAYS = 30
QUEUE_SHOWN = 10
FAILED_SHOWN = 5
TOP_DAYS = 7

STORE_LABELS = {
    "embedded": "Embedded MongoDB-wire store (local development)",
    "mongodb": "MongoDB",
}


@dataclass(frozen=True)
class AgentRow:
    agent: Agent
    consolidations_today: int
    failed_jobs: int
    in_review: int = 0

    @property
    def id(self) -> str:
        return self.agent.id


@dataclass(frozen=True)
class AgentPage:
    agents: list[Agent]
    after: str | None
    next_after: str | None
    rows: list[AgentRow]


def agent_page(*, store: MemoryStore, after: str | None, limit: int) -> AgentPage:
    """One page of agents in id order, with today's consolidations and failed jobs each.

    One extra agent is read to know whether a next page exists; the extra columns are
    one query each for the whole page.
    """
    found = agents_page(store=store, after=after, limit=limit + 1)
    agents = found[:limit]
    ids = [a.id for a in agents]
    today = agent_day_counters(store=store, agent_ids=ids, day=utcnow().date())
    failed = failed_job_counts(store=store, agent_ids=ids)
    waiting = review_counts_by_agent(store=store, agent_ids=ids)
    rows = [
        AgentRow(
            agent=a,
            consolidations_today=int(today.get(a.id, {}).get("consolidations", 0)),
            failed_jobs=failed.get(a.id, 0),
            in_review=waiting.get(a.id, 0),
        )
        for a in agents
    ]
    next_after = agents[-1].id if len(found) > limit else None
    return AgentPage(agents=agents, after=after, next_after=next_after, rows=rows)


def consolidation_queue(store: MemoryStore) -> list[Job]:
    """Consolidation jobs waiting or running, oldest first (the queue as a worker sees it)."""
    jobs: list[Job] = []
    for status in ("running", "queued"):
        page = jobs_newest(store=store, status=status, limit=QUEUE_SHOWN * 3)
        jobs += [j for j in page if j.kind == "consolidation"]
    return sorted(jobs, key=lambda j: j.created_at)[:QUEUE_SHOWN]


@require_GET
@role_required(Role.VIEWER)
def dashboard(request: HttpRequest) -> HttpResponse:
    """Full page, or only `_agent_table.html` when htmx asks for the next page."""
    store = get_store()
    after = request.GET.get("after", "").strip()[:MAX_CURSOR_CHARS] or None
    page = agent_page(store=store, after=after, limit=PAGE_SIZE)
    mode = store_mode()
    context: dict[str, object] = {
        "page": page,
        "store_mode": mode,
        "store_label": STORE_LABELS.get(mode, mode),
        "store_database": settings.MONGODB_DB,
    }
    if not after or request.headers.get("HX-Request") != "true":
        busiest = None if request.GET.get("chart", "").strip() else busiest_agent(store=store)
        chart_agent = request.GET.get("chart", "").strip()[:MAX_CURSOR_CHARS] or (
            busiest.id if busiest else None
        )
        days = (
            activity_days(store=store, agent_id=chart_agent, last=utcnow().date(), days=CHART_DAYS)
            if chart_agent
            else []
        )
        context.update(
            {
                "chart_agent": chart_agent,
                "chart": activity_chart(days) if days else None,
                "health": retrieval_health(store=store, agent_id=chart_agent, days=TOP_DAYS)
                if chart_agent
                else None,
                "queue": consolidation_queue(store),
                "failed": jobs_newest(store=store, status="failed", limit=FAILED_SHOWN),
                # Cost and backlog rankings, from the usage counters (bounded reads).
                **ranked_scopes(store, days=TOP_DAYS),
            }
        )
    return render_page(
        request, page="ui/dashboard.html", partial="ui/_agent_table.html", context=context
    )
