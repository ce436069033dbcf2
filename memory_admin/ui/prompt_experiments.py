"""Prompt experiments on the prompt editor: the form (scope, inputs, budget), its estimate,
the run; the experiment's page with its table and drill-down; re-run.

Thin: the estimate and the page read through `streams.drafts`, the run and the re-run
are actions (`streams.actions.prompt_experiments`); the job does the model calls.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, form_errors, found
from memory_admin.ui.diff import side_by_side
from memory_admin.ui.forms import TextField
from memory_admin.ui.htmx import render_page, wants_partial
from memory_admin.ui.roles import Role, request_role, role_required
from streams.actions.prompt_experiments import (
    do_prompt_experiment_rerun,
    do_prompt_experiment_start,
)
from streams.core.exceptions import InvalidInput, NotFound
from streams.drafts.experiment_views import experiment_get, experiment_page
from streams.drafts.experiments import (
    MAX_BUDGET_TOKENS,
    MAX_SESSIONS,
    experiment_estimate,
    experiment_input,
)
from streams.prompts import MAX_TEMPLATE_CHARS

EXPERIMENTS_LISTED = 10
DEFAULT_SESSIONS = 10
DEFAULT_BUDGET = 100_000


class ExperimentForm(forms.Form):
    draft = TextField(max_length=MAX_TEMPLATE_CHARS, widget=forms.HiddenInput)
    scope_id = forms.CharField(max_length=24, label="Scope id")
    sessions = forms.IntegerField(
        min_value=1, max_value=MAX_SESSIONS, initial=DEFAULT_SESSIONS, label="Inputs"
    )
    budget_tokens = forms.IntegerField(
        min_value=1, max_value=MAX_BUDGET_TOKENS, initial=DEFAULT_BUDGET, label="Token budget"
    )


def experiment_form_context(
    store: MemoryStore, agent_id: str, kind: str, scope_id: str | None
) -> dict[str, Any]:
    """What the editor's Experiment panel and its list need."""
    initial = {"scope_id": scope_id or "", "sessions": DEFAULT_SESSIONS}
    return {
        "experiment_form": ExperimentForm(initial=initial | {"budget_tokens": DEFAULT_BUDGET}),
        "experiments": experiment_page(
            store=store, agent_id=agent_id, kind=kind, limit=EXPERIMENTS_LISTED
        ).items,
    }


@require_POST
@role_required(Role.OPERATOR)
def prompt_experiment_estimate(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """The most the experiment would cost, before any model call; then the Run button."""
    store = get_store()
    form = _bound_form(request)
    context: dict[str, Any] = {"agent_id": agent_id, "kind": kind, "experiment_form": form}
    if form.is_valid():
        try:
            given = experiment_input(store=store, agent_id=agent_id, kind=kind, **form.cleaned_data)
            context["estimate"] = estimate = experiment_estimate(store=store, given=given)
            context["estimate_cost"] = dollars(estimate["estimated_cost_micro_usd"])
        except (InvalidInput, NotFound) as exc:
            _field_error(form, exc)
    status = 422 if form.errors else 200
    return render(request, "ui/_experiment_form.html", context, status=status)


@require_POST
@role_required(Role.OPERATOR)
def prompt_experiment_start(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Queue the experiment and go to its page."""
    store = get_store()
    form = _bound_form(request)
    context: dict[str, Any] = {"agent_id": agent_id, "kind": kind, "experiment_form": form}
    if form.is_valid():
        try:
            experiment, _job = do_prompt_experiment_start(
                store=store, actor=actor(request), agent_id=agent_id, kind=kind, **form.cleaned_data
            )
        except (InvalidInput, NotFound) as exc:
            _field_error(form, exc)
        else:
            return _to_experiment(request, experiment["id"])
    return render(request, "ui/_experiment_form.html", context, status=422)


@require_GET
@role_required(Role.VIEWER)
def prompt_experiment_detail(request: HttpRequest, experiment_id: str) -> HttpResponse:
    """The experiment's table, totals and drill-down; the table refreshes while it runs."""
    experiment = found(experiment_get, store=get_store(), experiment_id=experiment_id)
    summary = experiment["summary"]
    user_role = request_role(request)
    context = {
        "experiment": experiment,
        "rows": [_row(unit) for unit in experiment["units"]],
        "summary": summary,
        "summary_sides": _summary_sides(summary),
        "running": experiment["status"] in ("queued", "running"),
        "folds": experiment["kind"] == "consolidation",  # words, not items routed
        "can_edit": user_role is not None and user_role >= Role.OPERATOR,
        "editor_url": reverse("ui:prompt_edit", args=[experiment["agent_id"], experiment["kind"]]),
    }
    return render_page(
        request,
        page="ui/prompt_experiment.html",
        partial="ui/_experiment_table.html",
        context=context,
    )


@require_POST
@role_required(Role.OPERATOR)
def prompt_experiment_rerun(request: HttpRequest, experiment_id: str) -> HttpResponse:
    """The same draft, scope, inputs and budget again, against the prompt in effect now."""
    experiment, _job = found(
        do_prompt_experiment_rerun,
        store=get_store(),
        actor=actor(request),
        experiment_id=experiment_id,
    )
    return _to_experiment(request, experiment["id"])


def dollars(micro_usd: int | None) -> str:
    """Micro-dollars as the Usage page writes money; "" without a price."""
    return "" if micro_usd is None else f"${micro_usd / 1_000_000:.4f}"


def _bound_form(request: HttpRequest) -> ExperimentForm:
    data = request.POST.copy()
    data["draft"] = request.POST.get("text", request.POST.get("draft", ""))
    return ExperimentForm(data)


def _field_error(form: ExperimentForm, exc: InvalidInput | NotFound) -> None:
    if isinstance(exc, NotFound):
        form.add_error("scope_id", exc.message)
        return
    form_errors(form, exc, default_field="scope_id")
    if any(d.get("field") == "draft" for d in exc.details or [] if isinstance(d, dict)):
        form.add_error(None, f"The template in the editor: {exc.message}")


def _to_experiment(request: HttpRequest, experiment_id: str) -> HttpResponse:
    url = reverse("ui:prompt_experiment", args=[experiment_id])
    if wants_partial(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def _summary_sides(summary: dict[str, Any] | None) -> list[tuple[dict[str, Any], str]]:
    if not summary or "draft" not in summary:
        return []
    return [
        (summary[key] | {"cost": dollars(summary[key]["cost_micro_usd"])}, label)
        for key, label in (("draft", "draft"), ("in_effect", "in effect"))
    ]


def _row(unit: dict[str, Any]) -> dict[str, Any]:
    """A unit with the word diff of the two answers (the prompt in effect, then the draft)."""
    draft, in_effect = unit["draft"], unit["in_effect"]
    return unit | {
        "diff": side_by_side(in_effect["text"] or "", draft["text"] or ""),
        "draft_cost": dollars(draft["cost_micro_usd"]),
        "in_effect_cost": dollars(in_effect["cost_micro_usd"]),
    }
