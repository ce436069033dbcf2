"""What every page family shares: the acting user's name, domain errors as pages and
form errors, the audit call, and reading ids and cursors from the query string."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest

from streams.audit import audit_record
from streams.exceptions import InvalidInput, MemoryServiceError, NotFound
from streams.store import MemoryStore

MAX_PARAM_CHARS = 200


def actor(request: HttpRequest) -> str:
    """Who did it, as the history and the audit log record it."""
    return f"ui:{request.user.get_username()}"


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


def form_errors(form: forms.Form, exc: InvalidInput, *, default_field: str | None = None) -> None:
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


def audit(
    request: HttpRequest,
    *,
    store: MemoryStore,
    action: str,
    object_type: str,
    object_id: str,
    agent_id: str | None = None,
    summary: dict[str, Any] | None = None,
) -> None:
    """Record the one audit entry of a UI action, as `ui:<username>`."""
    audit_record(
        store=store,
        actor=actor(request),
        action=action,
        object_type=object_type,
        object_id=object_id,
        agent_id=agent_id,
        summary=summary,
    )


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
