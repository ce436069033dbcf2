"""The lifecycle ranking switches on the settings pages: an agent's (its own page, linked
from the Agents page) and a scope's (a block of the scope page's settings), each switch
with the effect the retrieval benchmark measured beside it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, flash_error, found
from memory_admin.ui.roles import Role, role_required
from streams.actions.ranking import do_agent_ranking_update, do_scope_ranking_update
from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput, NotFound
from streams.memory.scopes import scope_get
from streams.search.ranking_settings import (
    MEASURED_ON,
    RANKING_SWITCHES,
    SWITCH_LABELS,
    ResolvedSwitch,
    resolve_switches,
    scope_switches,
)
from streams.selectors import agent_get

CHOICES = [("", "inherit"), ("on", "on"), ("off", "off")]
VALUES: dict[str, bool | None] = {"": None, "on": True, "off": False}


class RankingForm(forms.Form):
    """One choice per switch: inherit (the level above decides), on or off."""

    recency = forms.ChoiceField(choices=CHOICES, required=False)
    mmr = forms.ChoiceField(choices=CHOICES, required=False)
    feedback = forms.ChoiceField(choices=CHOICES, required=False)

    def changes(self) -> dict[str, bool | None]:
        return {name: VALUES[self.cleaned_data.get(name) or ""] for name in RANKING_SWITCHES}


def ranking_rows(switches: dict[str, ResolvedSwitch], *, inherited_from: str) -> list[dict]:
    """What the block shows per switch: its label, own choice, value in use, its source and
    the measured effect."""
    return [
        {
            "name": s.name,
            "label": SWITCH_LABELS[s.name],
            "own": "" if s.own is None else ("on" if s.own else "off"),
            "value": s.value,
            "source": s.source,
            "inherited_from": inherited_from,
            "effect": s.effect.figure,
        }
        for s in switches.values()
    ]


def ranking_context(store: MemoryStore, scope: Scope) -> dict[str, Any]:
    """The scope page's ranking block."""
    switches = scope_switches(store=store, scope=scope)
    return {
        "ranking_rows": ranking_rows(switches, inherited_from="agent"),
        "ranking_measured_on": MEASURED_ON,
    }


@require_POST
@role_required(Role.OPERATOR)
def scope_ranking(request: HttpRequest, scope_id: str) -> HttpResponse:
    """Save the scope's own switches; back to the scope page, saying so."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    form = RankingForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The ranking settings were not saved: choose inherit, on or off.")
        return redirect(f"{_scope_url(scope)}#ranking")
    try:
        do_scope_ranking_update(
            store=store, actor=actor(request), scope=scope, changes=form.changes()
        )
    except (InvalidInput, NotFound) as exc:
        flash_error(request, exc)
    else:
        messages.success(request, "Ranking settings saved.")
    return redirect(f"{_scope_url(scope)}#ranking")


def _scope_url(scope: Scope) -> str:
    return reverse("ui:scope_detail", args=[scope.id])


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def agent_ranking(request: HttpRequest, agent_id: str) -> HttpResponse:
    """The agent's switches (every scope that sets none of its own follows them)."""
    store = get_store()
    agent = found(agent_get, store=store, agent_id=agent_id)
    status = 200
    if request.method == "POST":
        form = RankingForm(request.POST)
        if form.is_valid():
            agent = do_agent_ranking_update(
                store=store, actor=actor(request), agent_id=agent.id, changes=form.changes()
            )
            messages.success(request, "Ranking settings saved.")
            return redirect("ui:agent_ranking", agent_id=agent.id)
        messages.error(request, "The ranking settings were not saved: choose inherit, on or off.")
        status = 422
    switches = resolve_switches(agent_ranking=agent.ranking)
    context = {
        "agent": agent,
        "ranking_rows": ranking_rows(switches, inherited_from="code"),
        "ranking_measured_on": MEASURED_ON,
    }
    return render(request, "ui/agent_ranking.html", context, status=status)
