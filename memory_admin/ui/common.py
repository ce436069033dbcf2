"""What every page family shares: the acting user, domain errors as pages and form
errors, and reading ids and cursors from the query string. (Audit entries are recorded
by the domain's actions, `streams.actions`, never here.)"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest
from django.template.defaultfilters import pluralize

from streams.actions import Actor
from streams.core.exceptions import InvalidInput, MemoryServiceError, NotFound, Refused

MAX_PARAM_CHARS = 200


def actor(request: HttpRequest) -> Actor:
    """Who did it, as the history and the audit log record it: `ui:<username>`."""
    return Actor.ui(request.user.get_username())


def param(request: HttpRequest, name: str) -> str | None:
    """A query-string value, trimmed and bounded; None when absent or blank."""
    value = request.GET.get(name, "").strip()[:MAX_PARAM_CHARS]
    return value or None


def found(call: Any, /, **kwargs: Any) -> Any:
    """`call(**kwargs)`, with the domain's NotFound (a malformed id included) as the 404 page."""
    try:
        return call(**kwargs)
    except NotFound as exc:
        raise Http404(exc.message) from exc


def form_errors(
    form: forms.Form, exc: InvalidInput | Refused, *, default_field: str | None = None
) -> None:
    """Put a domain validation error next to the field it names (or on the form)."""
    fields = [
        item.get("field")
        for item in (exc.details if isinstance(exc.details, list) else [])
        if isinstance(item, dict)
    ]
    field = next((f for f in fields if f in form.fields), default_field)
    form.add_error(field if field in form.fields else None, exc.message)


def flash_error(request: HttpRequest, exc: MemoryServiceError) -> None:
    messages.error(request, _sentence(exc.message))


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def counted(count: int, noun: str) -> str:
    """A count as words for a flash: "1 consolidation", "2 consolidations" (never "(s)")."""
    return f"{count} {noun}{pluralize(count)}"
