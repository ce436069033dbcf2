"""Bulk actions by filter from a scope's observation log: the filter bar previews "N match",
the page shows the count and a sample behind a confirmation, POST queues the `bulk` job."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_http_methods

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, counted, found
from memory_admin.ui.htmx import wants_partial
from memory_admin.ui.roles import Role, role_required
from streams.actions.bulk import BulkOutcome, do_observations_bulk
from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput, NotFound
from streams.memory.bulk import MAX_EXTERNAL_ID, MAX_QUERY_CHARS, UNUSED_DAYS_RANGE, BulkFilter
from streams.memory.scopes import scope_get, scope_list

ACTIONS = [("delete", "Delete"), ("private", "Mark private"), ("move", "Move to another scope")]
STATUSES = [("", "Any status"), ("pending", "Pending"), ("consolidated", "Consolidated")]
TARGETS_SHOWN = 100
_DATE = forms.DateInput(attrs={"type": "date"})


def _text(placeholder: str) -> forms.TextInput:
    return forms.TextInput(attrs={"placeholder": placeholder, "aria-label": placeholder})


class BulkForm(forms.Form):
    session_id = forms.CharField(
        max_length=MAX_EXTERNAL_ID, required=False, label="Session", widget=_text("session id")
    )
    speaker_user_id = forms.CharField(
        max_length=MAX_EXTERNAL_ID, required=False, label="Speaker", widget=_text("speaker")
    )
    q = forms.CharField(
        max_length=MAX_QUERY_CHARS, required=False, label="Text", widget=_text("text")
    )
    observed_after = forms.DateField(required=False, label="Observed from", widget=_DATE)
    observed_before = forms.DateField(required=False, label="Observed before", widget=_DATE)
    status = forms.ChoiceField(choices=STATUSES, required=False)
    unused_days = forms.IntegerField(
        min_value=UNUSED_DAYS_RANGE[0],
        max_value=UNUSED_DAYS_RANGE[1],
        required=False,
        label="Not retrieved in (days)",
    )
    action = forms.ChoiceField(choices=ACTIONS)
    target_scope_id = forms.ChoiceField(choices=[("", "—")], required=False, label="Move to")

    def __init__(self, *args: Any, targets: list[Scope], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        target = self.fields["target_scope_id"]
        assert isinstance(target, forms.ChoiceField)  # declared above
        target.choices = [("", "— target scope —")] + [
            (s.id, f"{s.scope_type}: {s.label}") for s in targets
        ]

    def bulk_filter(self, scope: Scope) -> BulkFilter:
        data = self.cleaned_data
        return BulkFilter(
            scope_id=scope.id,
            session_id=data.get("session_id") or None,
            speaker_user_id=data.get("speaker_user_id") or None,
            q=data.get("q") or None,
            observed_after=_day(data.get("observed_after")),
            observed_before=_day(data.get("observed_before")),
            status=data.get("status") or None,
            unused_days=data.get("unused_days") or None,
        )


def _day(value: Any) -> datetime | None:
    return datetime.combine(value, time.min, tzinfo=UTC) if value else None


def _targets(store: MemoryStore, scope: Scope) -> list[Scope]:
    """The scopes a move may file into: the agent's other active scopes (the newest 100)."""
    page = scope_list(store=store, agent_id=scope.agent_id, limit=TARGETS_SHOWN)
    return [s for s in page.items if s.id != scope.id and s.is_active]


@require_http_methods(["GET", "POST"])
@role_required(Role.OPERATOR)
def observation_bulk(request: HttpRequest, scope_id: str) -> HttpResponse:
    """GET: the preview (for htmx, the filter bar's "N match: apply"; as a page, the count,
    a sample and the confirmation). POST: apply, as a `bulk` job."""
    store = get_store()
    scope = found(scope_get, store=store, scope_id=scope_id)
    data = request.POST if request.method == "POST" else request.GET
    form = BulkForm(data, targets=_targets(store, scope))
    outcome: BulkOutcome | None = None
    error: str | None = None
    needs_target = False
    if form.is_valid():
        action = form.cleaned_data["action"]
        target_id = form.cleaned_data.get("target_scope_id") or None
        # The filter bar's preview of a move has no target yet: it counts, and the page
        # that follows asks where to.
        needs_target = action == "move" and target_id is None and request.method == "GET"
        try:
            outcome = do_observations_bulk(
                store=store,
                actor=actor(request),
                agent_id=scope.agent_id,
                bulk_filter=form.bulk_filter(scope),
                action="delete" if needs_target else action,
                target_scope_id=None if action != "move" else target_id,
                dry_run=request.method != "POST",
                max_matched=settings.MEMORY_BULK_MAX,
                batch_size=settings.MEMORY_BULK_BATCH,
            )
        except (InvalidInput, NotFound) as exc:
            error = exc.message
    else:
        error = "; ".join(
            f"{_label(form, name)}: {' '.join(str(e) for e in errs)}"
            for name, errs in form.errors.items()
        )
    if request.method == "POST" and outcome is not None:
        if outcome.job is None:
            messages.info(request, "Nothing matched: nothing was changed.")
            return redirect(reverse("ui:scope_detail", args=[scope.id]) + "#observation-log")
        messages.success(request, _applied_message(form.cleaned_data["action"], outcome))
        return redirect(
            reverse("ui:scope_detail", args=[scope.id]) + f"?job={outcome.job.id}#observation-log"
        )
    context = {
        "scope": scope,
        "form": form,
        "outcome": outcome,
        "error": error,
        "needs_target": needs_target,
        "query": data.urlencode(),
        "action_label": dict(ACTIONS).get(form.data.get("action", ""), "Apply"),
    }
    status = 422 if error else 200
    template = "ui/_bulk_preview.html" if wants_partial(request) else "ui/observation_bulk.html"
    response = render(request, template, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response


def _label(form: forms.Form, name: str) -> str:
    field = form.fields.get(name)
    return str(field.label or name) if field is not None else "Form"


def _applied_message(action: str, outcome: BulkOutcome) -> str:
    verb = {"delete": "deletion", "private": "marking private", "move": "move"}[action]
    return (
        f"Bulk {verb} of {counted(outcome.matched, 'observation')} "
        "started: it runs in batches; consolidations that held them are rebuilt once. "
        "Its job page can undo it for a while."
    )
