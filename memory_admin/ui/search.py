"""Search inspector: for an agent, a user, groups and a message, what the agent would get:
whether retrieval fires and why, the ranked observations with scores, matched terms and
why each ranks where it does (score per term and mechanism, rank after each stage), and
the full context XML exactly as the context API returns it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.all_agents import ALL_AGENTS, agents_chosen
from memory_admin.ui.common import param
from memory_admin.ui.forms import SearchForm
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from streams.context.assemble import context_assemble
from streams.context.chat import chat_calls_for_user
from streams.context.tokens import context_sections, estimate_tokens
from streams.search.index import search_observations
from streams.selectors import agents_page

AGENT_CHOICES = 100
RANKED_SHOWN = 10
MAX_GROUPS = 20
CHAT_CALLS_SHOWN = 5


def parse_groups(text: str) -> list[tuple[str, str | None]]:
    """ "g1=Eden Team, g2" -> [("g1", "Eden Team"), ("g2", None)] (ids 1..128 chars)."""
    groups: list[tuple[str, str | None]] = []
    for part in text.split(","):
        group_id, _, name = part.partition("=")
        group_id, name = group_id.strip()[:128], name.strip()[:128]
        if group_id:
            groups.append((group_id, name or None))
    return groups[:MAX_GROUPS]


@require_GET
@role_required(Role.VIEWER)
def search_inspector(request: HttpRequest) -> HttpResponse:
    """A GET form (shareable URL); htmx swaps only the result.

    The context is assembled by the same service as `POST /agents/{id}/context`, so it
    is byte for byte what the agent gets, and it counts as an access of the
    observations it retrieves, as the agent's call would.
    """
    store = get_store()
    agents = agents_page(store=store, limit=AGENT_CHOICES)
    agent_ids: list[str] = []
    if param(request, "agent"):  # an agent that is none is the 404 page
        _, agent_ids = agents_chosen(store, agents, param(request, "agent"))
    form = SearchForm(request.GET or None)
    if not request.GET and agents:
        form = SearchForm(initial={"agent": agents[0].id})
    result: dict[str, Any] | None = None
    if request.GET and form.is_valid():
        result = _result(store, agent_ids, form.cleaned_data)
    response = render_page(
        request,
        page="ui/search.html",
        partial="ui/_search_result.html",
        context={
            "form": form,
            "agents": agents,
            "all_agents": param(request, "agent") == ALL_AGENTS,
            "result": result,
        },
    )
    if result is not None:
        response["HX-Push-Url"] = result["share_url"]  # the address bar shows the same link
    return response


def _result(store: MemoryStore, agent_ids: list[str], data: dict[str, Any]) -> dict[str, Any]:
    """What the search shows: the ranked hits, and for one user of one agent the context
    the agent would get and the chat calls that injected memory lately."""
    every = data["agent"] == ALL_AGENTS
    groups = parse_groups(data.get("groups") or "")
    user_id = data.get("user") or None
    semantic = semantic_ranker()
    ranked = _ranked(store, agent_ids, data, groups, semantic)
    context = None
    if every:
        user_id = None  # one agent's context only: the page says so
    if user_id:
        context = context_assemble(
            store=store,
            agent_id=data["agent"],
            user_id=user_id,
            user_name=data.get("user_name") or None,
            groups=groups,
            message=data["message"],
            semantic=semantic,
            log=False,  # an operator's look, not a call of the agent's
        )
    chat_calls = []
    if user_id:  # what the chat endpoint injected for this user lately
        chat_calls = chat_calls_for_user(
            store=store, agent_id=data["agent"], user_id=user_id, limit=CHAT_CALLS_SHOWN
        )
    result = {
        "all_agents": every,
        "ranked": ranked,
        "context": context,
        "groups": groups,
        "user_id": user_id,
        "chat_calls": chat_calls,
    }
    if context is not None:
        result["sections"] = context_sections(context.xml)
        result["context_tokens"] = estimate_tokens(context.xml)
    # The address of this result (what htmx pushes too): the form's fields, nothing else.
    shared = {k: v for k, v in data.items() if v}
    result["share_url"] = f"{reverse('ui:search')}?{urlencode(shared)}"
    return result


def _ranked(
    store: Any,
    agent_ids: list[str],
    data: dict[str, Any],
    groups: list[tuple[str, str | None]],
    semantic: Any,
) -> list[Any]:
    """The top hits: one agent's, or each agent's top `RANKED_SHOWN` merged by score (the
    picker's agents, each search as bounded as one agent's)."""
    hits: list[Any] = []
    for agent_id in agent_ids:
        hits.extend(
            search_observations(
                store=store,
                agent_id=agent_id,
                query=data["message"],
                user_id=data.get("user") or None,
                group_ids=[g for g, _ in groups] or None,
                limit=RANKED_SHOWN,
                semantic=semantic,
                record_access=False,  # the operator's look; the context counts as the agent's
            )
        )
    hits.sort(key=lambda h: -h.score)
    return hits[:RANKED_SHOWN]
