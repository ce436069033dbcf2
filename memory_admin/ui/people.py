"""People and API keys, for admins: list, create, change role, deactivate; keys created
(shown once), bound to agents, revoked. Every write goes through `accounts.actions`,
which records the audit entry; these views only parse, call and render."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_admin.accounts.actions import (
    ROLE_NAMES,
    api_key_create,
    api_key_revoke,
    role_of,
    user_create,
    user_set_active,
    user_set_role,
    user_unlock,
)
from memory_admin.accounts.lockouts import locked_out
from memory_admin.models import DEFAULT_PERMISSIONS, PERMISSIONS, ApiKey
from memory_admin.stores import get_store
from memory_admin.ui.common import actor, flash_error, form_errors
from memory_admin.ui.roles import Role, role_required
from streams.core.exceptions import Conflict, InvalidInput
from streams.selectors import agents_page

PAGE_SIZE = 25
AGENT_CHOICES = 200
ROLE_CHOICES = [(name, name) for name in ROLE_NAMES]


class PersonForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial="viewer")


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


REACH_CHOICES = [
    ("agents", "Only the agents ticked"),
    ("all", "All agents (admin key: every permission)"),
]
PERMISSION_CHOICES = [(p, p) for p in PERMISSIONS]


class KeyForm(forms.Form):
    """A key is bound to the agents ticked, or (an explicit choice, never the silent
    result of ticking none) to every agent as an admin key."""

    name = forms.CharField(max_length=100)
    reach = forms.ChoiceField(choices=REACH_CHOICES, widget=forms.RadioSelect)
    agents = forms.MultipleChoiceField(required=False, choices=[])
    permissions = forms.MultipleChoiceField(
        required=False, choices=PERMISSION_CHOICES, initial=list(DEFAULT_PERMISSIONS)
    )

    def __init__(self, *args: Any, agent_ids: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agents = self.fields["agents"]
        assert isinstance(agents, forms.MultipleChoiceField)  # declared above
        agents.choices = [(a, a) for a in agent_ids]
        self.fields["reach"].initial = "agents" if agent_ids else "all"

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        if data.get("reach") == "all":
            if data.get("agents"):
                self.add_error("agents", "Untick the agents, or choose “Only the agents ticked”.")
            data["agents"], data["permissions"] = [], None
        elif data.get("reach") == "agents":
            if not data.get("agents") and "agents" not in self.errors:
                self.add_error(
                    "agents", "Tick at least one agent, or choose “All agents (admin key)”."
                )
            if not data.get("permissions"):
                self.add_error("permissions", "Tick at least one permission.")
        return data


def _agent_ids() -> list[str]:
    return [a.id for a in agents_page(store=get_store(), limit=AGENT_CHOICES)]


def _page(request: HttpRequest, queryset: Any) -> Any:
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))


def _created_page(
    request: HttpRequest,
    *,
    template: str,
    context: Callable[[HttpRequest, Any], dict[str, Any]],
    form: forms.Form,
    create: Callable[[dict[str, Any]], dict[str, Any]],
    default_field: str,
) -> HttpResponse:
    """Person and key creation alike: the list again with what was created (its secret
    shown on this answer only), or the form with its error (422)."""
    if form.is_valid():
        try:
            created = create(form.cleaned_data)
        except (InvalidInput, Conflict) as exc:
            form_errors(form, exc, default_field=default_field)  # type: ignore[arg-type]
        else:
            return render(request, template, {**context(request, None), "created": created})
    return render(request, template, context(request, form), status=422)


def _flashed(request: HttpRequest, call: Callable[[], object], success: str) -> HttpResponse:
    """Role and active changes alike: do it, say how it went, back to the people list."""
    try:
        call()
    except (InvalidInput, Conflict) as exc:
        flash_error(request, exc)
    else:
        messages.success(request, success)
    return redirect("ui:people")


# -- people ---------------------------------------------------------------------------


def _people_context(request: HttpRequest, form: Any = None) -> dict[str, Any]:
    people = _page(request, get_user_model().objects.order_by("username"))
    locked = locked_out([p.get_username() for p in people])
    rows = [
        {"person": p, "role": role_of(p), "locked": locked.get(p.get_username(), 0)} for p in people
    ]
    return {"people": people, "rows": rows, "form": form or PersonForm(), "roles": ROLE_NAMES}


@require_GET
@role_required(Role.ADMIN)
def people_list(request: HttpRequest) -> HttpResponse:
    return render(request, "ui/people.html", _people_context(request))


@never_cache
@require_POST
@role_required(Role.ADMIN)
def person_create(request: HttpRequest) -> HttpResponse:
    """Create an account; its one-time password is shown on this answer only."""
    return _created_page(
        request,
        template="ui/people.html",
        context=_people_context,
        form=PersonForm(request.POST),
        create=lambda data: dict(
            zip(("person", "password"), user_create(actor=actor(request), **data), strict=True)
        ),
        default_field="username",
    )


@require_POST
@role_required(Role.ADMIN)
def person_role(request: HttpRequest, user_id: int) -> HttpResponse:
    person = get_object_or_404(get_user_model(), pk=user_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick a role: viewer, operator or admin.")
        return redirect("ui:people")
    role = form.cleaned_data["role"]
    return _flashed(
        request,
        lambda: user_set_role(actor=actor(request), user=person, role=role),
        f"{person.username} is now {role}.",
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def person_active(request: HttpRequest, user_id: int) -> HttpResponse:
    """Deactivate behind a confirmation page; reactivate directly."""
    person = get_object_or_404(get_user_model(), pk=user_id)
    if request.method == "GET":
        return render(request, "ui/person_deactivate.html", {"person": person})
    active = request.POST.get("active") == "true"
    verb = "reactivated" if active else "deactivated: they can no longer sign in"
    return _flashed(
        request,
        lambda: user_set_active(actor=actor(request), user=person, active=active),
        f"{person.username} was {verb}.",
    )


@require_POST
@role_required(Role.ADMIN)
def person_unlock(request: HttpRequest, user_id: int) -> HttpResponse:
    """Lift a sign-in lockout (a stranger's wrong passwords locked it for their address)."""
    person = get_object_or_404(get_user_model(), pk=user_id)
    return _flashed(
        request,
        lambda: user_unlock(actor=actor(request), user=person),
        f"{person.username} can sign in again from every address.",
    )


# -- API keys -------------------------------------------------------------------------


def _keys_context(request: HttpRequest, form: Any = None) -> dict[str, Any]:
    agent_ids = _agent_ids()
    keys = _page(request, ApiKey.objects.order_by("revoked_at", "name"))
    return {"keys": keys, "form": form or KeyForm(agent_ids=agent_ids), "agent_ids": agent_ids}


@require_GET
@role_required(Role.ADMIN)
def key_list(request: HttpRequest) -> HttpResponse:
    return render(request, "ui/api_keys.html", _keys_context(request))


@never_cache
@require_POST
@role_required(Role.ADMIN)
def key_create(request: HttpRequest) -> HttpResponse:
    """Create a key; the raw key is on this answer only (stored as a hash), with a copy button."""
    return _created_page(
        request,
        template="ui/api_keys.html",
        context=_keys_context,
        form=KeyForm(request.POST, agent_ids=_agent_ids()),
        create=lambda data: dict(
            zip(
                ("key", "raw"),
                api_key_create(
                    actor=actor(request),
                    name=data["name"],
                    agent_ids=data["agents"],
                    permissions=data["permissions"],
                ),
                strict=True,
            )
        ),
        default_field="name",
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    key = get_object_or_404(ApiKey, pk=key_id)
    if request.method == "GET":
        return render(request, "ui/api_key_revoke.html", {"key": key})
    if api_key_revoke(actor=actor(request), key=key):
        messages.success(request, f"Revoked {key.name}: it answers 401 from now on.")
    else:
        messages.info(request, f"{key.name} was revoked already.")
    return redirect("ui:api_keys")
