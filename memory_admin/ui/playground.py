"""The chat playground (operators): talk to an agent through the chat proxy as a user in
groups, and see for each turn the memory given, the retrieval decision, the tokens per
section, the memory tool's calls and a link to the turn's context call.

A turn is a real call: it is recorded on the session's page and its user message is
ingested like any chat turn (`memory_admin.chat_turn`), so it needs the operator role.
The conversation so far travels with the form (`history`, JSON, validated), so the page
keeps no copy of it; the turns' inspections are read back from the session's call records.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from memory_admin.chat_turn import play_turn
from memory_admin.integrations.chat_upstream import upstream_config
from memory_admin.stores import get_store
from memory_admin.ui.common import actor
from memory_admin.ui.htmx import render_page
from memory_admin.ui.roles import Role, role_required
from streams.context.chat import ChatMemory, chat_session_page
from streams.context.tokens import context_sections
from streams.selectors import agents_page, busiest_agent

AGENT_CHOICES = 100
MAX_GROUPS = 20
MAX_TURNS = 40  # messages of history carried by the form
MAX_MESSAGE = 4000
TURNS_SHOWN = 20
DEFAULT_MODEL = "gpt-4o-mini"


class PlaygroundForm(forms.Form):
    agent = forms.CharField(max_length=128)
    user = forms.CharField(max_length=128, label="User id", strip=False)
    user_name = forms.CharField(max_length=200, required=False)
    groups = forms.CharField(max_length=2000, required=False)
    session = forms.CharField(max_length=128, required=False)
    model = forms.CharField(max_length=256, required=False)
    memory_max_tokens = forms.IntegerField(min_value=16, max_value=1_000_000, required=False)
    message = forms.CharField(max_length=MAX_MESSAGE)
    history = forms.CharField(max_length=MAX_TURNS * (MAX_MESSAGE + 100), required=False)

    def __init__(self, *args: Any, agent_ids: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.agent_ids = set(agent_ids)

    def clean_agent(self) -> str:
        agent = self.cleaned_data["agent"]
        if agent not in self.agent_ids:
            raise forms.ValidationError("no such agent")
        return agent

    def clean_user(self) -> str:
        user = self.cleaned_data["user"]
        if not user.strip():
            raise forms.ValidationError("This field is required.")
        if user != user.strip():
            raise forms.ValidationError("no spaces around the id")
        return user

    def clean_groups(self) -> list[tuple[str, str | None]]:
        groups: list[tuple[str, str | None]] = []
        for part in (self.cleaned_data.get("groups") or "").split(","):
            group_id, _, name = part.partition("=")
            group_id, name = group_id.strip(), name.strip()
            if not group_id and not name:
                continue
            if not 1 <= len(group_id) <= 128 or len(name) > 128:
                raise forms.ValidationError("each group: an id of 1..128 characters, =Name")
            groups.append((group_id, name or None))
        if len(groups) > MAX_GROUPS:
            raise forms.ValidationError(f"at most {MAX_GROUPS} groups")
        return list(dict.fromkeys(groups))

    def clean_session(self) -> str:
        session = (self.cleaned_data.get("session") or "").strip()
        return session or f"playground-{secrets.token_hex(6)}"

    def clean_history(self) -> list[dict[str, str]]:
        raw = self.cleaned_data.get("history") or "[]"
        try:
            history = json.loads(raw)
        except ValueError as exc:
            raise forms.ValidationError("the conversation so far is not valid JSON") from exc
        if not isinstance(history, list) or len(history) > MAX_TURNS:
            raise forms.ValidationError(f"the conversation: a list of at most {MAX_TURNS}")
        for item in history:
            if (
                not isinstance(item, dict)
                or set(item) != {"role", "content"}
                or item["role"] not in ("user", "assistant")
                or not isinstance(item["content"], str)
                or len(item["content"]) > MAX_MESSAGE
            ):
                raise forms.ValidationError(
                    "each message of the conversation: {role: user|assistant, content}"
                )
        return history


def _agents() -> list[str]:
    return [a.id for a in agents_page(store=get_store(), limit=AGENT_CHOICES)]


def _busiest(agent_ids: list[str]) -> str | None:
    agent = busiest_agent(store=get_store()) if agent_ids else None
    if agent is not None and agent.id in agent_ids:
        return agent.id
    return agent_ids[0] if agent_ids else None


def _turns(agent_id: str, session_id: str) -> list[dict[str, Any]]:
    """The session's recorded calls, newest first, with tokens per section."""
    page = chat_session_page(
        store=get_store(), agent_id=agent_id, session_id=session_id, cursor=None, limit=TURNS_SHOWN
    )
    for call in page.items:
        call["sections"] = context_sections(call["context"]) if call.get("context") else []
    return page.items


@require_GET
@role_required(Role.OPERATOR)
def playground(request: HttpRequest) -> HttpResponse:
    agent_ids = _agents()
    form = PlaygroundForm(
        agent_ids=agent_ids,
        initial={"agent": _busiest(agent_ids), "model": DEFAULT_MODEL, "user": "u-demo"},
    )
    return _render(request, form, agent_ids, conversation=[], turns=[], status=200)


@require_POST
@role_required(Role.OPERATOR)
def playground_turn(request: HttpRequest) -> HttpResponse:
    """One turn: the answer, the conversation so far, and each turn's inspection; a form
    with errors is a 422 with the messages beside its fields."""
    agent_ids = _agents()
    form = PlaygroundForm(request.POST, agent_ids=agent_ids)
    if not form.is_valid():
        return _render(request, form, agent_ids, conversation=[], turns=[], status=422)
    data = form.cleaned_data
    memory = ChatMemory(
        user_id=data["user"],
        session_id=data["session"],
        user_name=(data.get("user_name") or "").strip() or None,
        groups=tuple(data["groups"]),
        max_tokens=data.get("memory_max_tokens"),
    )
    messages = [*data["history"], {"role": "user", "content": data["message"]}]
    played = play_turn(
        store=get_store(),
        agent_id=data["agent"],
        memory=memory,
        messages=messages,
        model=data.get("model") or DEFAULT_MODEL,
        actor=str(actor(request)),
    )
    if played.error is None:
        messages.append({"role": "assistant", "content": played.answer})
    fresh = PlaygroundForm(
        agent_ids=agent_ids,
        initial={
            **{k: request.POST.get(k, "") for k in ("agent", "user", "user_name", "groups")},
            "model": data.get("model") or DEFAULT_MODEL,
            "memory_max_tokens": data.get("memory_max_tokens"),
            "session": data["session"],
            "history": json.dumps(messages[-MAX_TURNS:]),
        },
    )
    return _render(
        request,
        fresh,
        agent_ids,
        conversation=messages,
        turns=_turns(data["agent"], data["session"]),
        status=200,
        played=played,
    )


def _render(
    request: HttpRequest,
    form: PlaygroundForm,
    agent_ids: list[str],
    *,
    conversation: list[dict[str, str]],
    turns: list[dict[str, Any]],
    status: int,
    played: Any = None,
) -> HttpResponse:
    response = render_page(
        request,
        page="ui/playground.html",
        partial="ui/_playground.html",
        context={
            "form": form,
            "agent_ids": agent_ids,
            "conversation": conversation,
            "turns": turns,
            "played": played,
            "offline": upstream_config() is None,
        },
    )
    response.status_code = status
    return response
