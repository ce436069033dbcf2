"""The Import page (admins only): upload an export document, the one the Users page's
Export JSON and the API's export give, and see what the import did: applied, skipped,
refused. The import itself is the API's action (`do_memory_import`), so both check and
record it alike; this view only reads the file, calls it and renders."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from memory_admin.stores import get_store
from memory_admin.ui.common import actor
from memory_admin.ui.roles import Role, role_required
from streams.actions.exchange import do_memory_import
from streams.core.exceptions import InvalidInput, NotFound

SESSION_KEY = "ui_import_result"
# The result's counts, each with what it counted, under the heading it belongs to.
APPLIED = {
    "scopes_created": "scopes created",
    "observations_imported": "observations stored",
    "versions_imported": "consolidation versions stored",
    "settings_applied": "scopes given the document's settings, pins, prompts and groups",
}
SKIPPED = {
    "observations_already_there": "observations stored already (left as they are)",
    "deleted_skipped": "deleted observations (their text is gone)",
    "settings_skipped": "scopes that keep settings of their own",
}


class ImportForm(forms.Form):
    document = forms.FileField(label="Export document (JSON)")


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def user_import_view(request: HttpRequest) -> HttpResponse:
    """The upload form (GET, with the last import's result once), and the import itself
    (POST → redirect → GET); a refused document is 422 with every problem listed."""
    if request.method == "GET":
        result = request.session.pop(SESSION_KEY, None)
        return _page(request, ImportForm(), result=result)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, form, status=422)
    try:
        document = _read(form.cleaned_data["document"])
        agent_id = document.get("agent_id")
        if not isinstance(agent_id, str) or not agent_id:
            raise InvalidInput("the export names no agent (agent_id)")
        result = do_memory_import(
            store=get_store(), actor=actor(request), agent_id=agent_id, document=document
        )
    except (InvalidInput, NotFound) as exc:
        problems = exc.details if isinstance(exc.details, list) else []
        return _page(request, form, error=exc.message, problems=problems, status=422)
    request.session[SESSION_KEY] = {"agent_id": agent_id, **result}
    messages.success(request, f"Imported the export of {agent_id}: the result is below.")
    return redirect("ui:user_import")


def _read(upload: Any) -> dict[str, Any]:
    limit = settings.API_MAX_BODY_BYTES
    if upload.size > limit:
        raise InvalidInput(f"the file is larger than an import takes ({limit:,} bytes)")
    try:
        document = json.loads(upload.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput("the file is not a JSON document (an export's .json)") from exc
    if not isinstance(document, dict):
        raise InvalidInput("the file must be an export (a JSON object with its scopes)")
    return document


def _page(
    request: HttpRequest,
    form: ImportForm,
    *,
    result: dict[str, Any] | None = None,
    error: str | None = None,
    problems: list[Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    def rows(labels: dict[str, str]) -> list[dict[str, Any]]:
        return [
            {"key": key, "label": label, "count": (result or {}).get(key, 0)}
            for key, label in labels.items()
        ]

    context = {
        "form": form,
        "result": result,
        "applied": rows(APPLIED) if result else [],
        "skipped": rows(SKIPPED) if result else [],
        "refused": list((result or {}).get("refused") or []),
        "error": error,
        "problems": [p for p in problems or [] if isinstance(p, dict)],
    }
    return render(request, "ui/user_import.html", context, status=status)
