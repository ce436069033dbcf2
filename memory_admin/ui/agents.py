"""The Agents page (admins): every agent with its counts, and creating one by hand.

Agents also appear on their first conversation; one made here (or with `manage.py
create_agent`) is for a key or a page made before the agent has spoken.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from memory_admin.stores import get_store
from memory_admin.ui.common import actor, form_errors
from memory_admin.ui.roles import Role, role_required
from streams.actions.agents import MEMORY_TOOL_CHOICES, do_agent_create, do_agent_update
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.selectors import agents_page

AGENTS_SHOWN = 200


class AgentForm(forms.Form):
    agent_id = forms.CharField(max_length=128, strip=False)


class AgentSettingsForm(forms.Form):
    memory_tool = forms.ChoiceField(choices=[(c, c) for c in MEMORY_TOOL_CHOICES])


def _context(
    form: AgentForm | None = None,
    created: str | None = None,
    saved: str | None = None,
    settings_error: tuple[str, str] | None = None,
) -> dict[str, Any]:
    agents = agents_page(store=get_store(), limit=AGENTS_SHOWN + 1)
    return {
        "agents": agents[:AGENTS_SHOWN],
        "more": len(agents) > AGENTS_SHOWN,
        "form": form or AgentForm(),
        "created": created,
        "saved": saved,
        "settings_error": settings_error,
        "memory_tool_choices": MEMORY_TOOL_CHOICES,
    }


@require_GET
@role_required(Role.ADMIN)
def agent_list(request: HttpRequest) -> HttpResponse:
    return render(request, "ui/agents.html", _context())


@require_POST
@role_required(Role.ADMIN)
def agent_create(request: HttpRequest) -> HttpResponse:
    """Create the agent; the list again with it, or the form with its error (422)."""
    form = AgentForm(request.POST)
    if form.is_valid():
        try:
            agent = do_agent_create(
                store=get_store(), actor=actor(request), agent_id=form.cleaned_data["agent_id"]
            )
        except (InvalidInput, Conflict) as exc:
            if isinstance(exc, Conflict):
                form.add_error("agent_id", exc.message)
            else:
                form_errors(form, exc, default_field="agent_id")
        else:
            return render(request, "ui/agents.html", _context(created=agent.id))
    return render(request, "ui/agents.html", _context(form=form), status=422)


@require_POST
@role_required(Role.ADMIN)
def agent_settings(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Save an agent's settings (the chat proxy's memory tool); the list again, saying so."""
    form = AgentSettingsForm(request.POST)
    if not form.is_valid():
        error = (agent_id, " ".join(str(e) for e in form.errors.get("memory_tool", ["invalid"])))
        return render(request, "ui/agents.html", _context(settings_error=error), status=422)
    try:
        do_agent_update(
            store=get_store(),
            actor=actor(request),
            agent_id=agent_id,
            memory_tool=form.cleaned_data["memory_tool"],
        )
    except NotFound as exc:
        return render(
            request, "ui/agents.html", _context(settings_error=(agent_id, exc.message)), status=404
        )
    return render(request, "ui/agents.html", _context(saved=agent_id))
