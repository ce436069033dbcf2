"""Prompt editor: agent defaults, scope overrides and scope guidance, with history, diff
(v0 = the code default), revert, and prompt checks run on the draft before a save.

What each page says is in effect comes from the resolver (`streams.prompts.resolver`),
the same function the LLM requests are built from. Dry runs and check runs are in
`prompt_runs.py`.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import MemoryStore, get_store
from memory_admin.ui.common import actor, counted, flash_error, form_errors, found, param
from memory_admin.ui.diff import side_by_side
from memory_admin.ui.forms import CheckForm, DryRunForm, PromptForm
from memory_admin.ui.prompt_experiments import experiment_form_context
from memory_admin.ui.questions import defaults_context
from memory_admin.ui.roles import Role, request_role, role_required
from streams.actions.prompts import do_prompt_revert, do_prompt_save
from streams.core.documents import PROMPT_KINDS, PromptKind, Scope
from streams.core.exceptions import Conflict, InvalidInput, MemoryServiceError
from streams.drafts.check_kinds import EXPECTATIONS_BY_KIND
from streams.drafts.corrections import corrections_page
from streams.drafts.dry_run import recent_sessions
from streams.drafts.prompt_checks import EXPECTATION_TYPES, CheckComparison, check_list, checks_run
from streams.memory.scopes import scope_get
from streams.prompts import (
    PLACEHOLDERS,
    Draft,
    PromptPart,
    prompt_current,
    prompt_history,
    prompt_role,
    prompt_version_text,
    resolve_for_scope,
    resolve_template,
    validate_prompt,
)
from streams.selectors import active_shards, agents_page, shard_find

AGENT_CHOICES = 100
HISTORY_SHOWN = 20
CORRECTIONS_SHOWN = 10
MAX_SHARDS = 50
CONFLICT_MESSAGE = (
    "Not saved: someone saved a newer version while you were editing. Your text is kept "
    "here; compare it with the history below and save again."
)
GUIDANCE_SECTION = {"group": "{groups}", "collective": "{collective}", "shard": "{shards}"}


@require_GET
@role_required(Role.VIEWER)
def prompt_index(request: HttpRequest) -> HttpResponse:
    """Per agent: each kind's template in effect, and each shard's guidance with its version."""
    store = get_store()
    agents = agents_page(store=store, limit=AGENT_CHOICES)
    agent_id = param(request, "agent") or (agents[0].id if agents else None)
    rows = []
    questions: list[dict[str, Any]] = []
    shards: list[dict[str, Any]] = []
    collective = None
    if agent_id:
        for kind in PROMPT_KINDS:
            current = prompt_current(store=store, agent_id=agent_id, kind=kind)
            part = resolve_template(store=store, agent_id=agent_id, kind=kind)
            rows.append({"kind": kind, "part": part, "current": current})
        for shard in active_shards(store=store, agent_id=agent_id, limit=MAX_SHARDS):
            guidance = level_part(store, agent_id, "extraction", shard)
            shards.append({"scope": shard, "part": guidance})
        collective = shard_find(store=store, agent_id=agent_id, name=None)
        questions = defaults_context(store, agent_id)
    context = {
        "agents": agents,
        "agent_id": agent_id,
        "rows": rows,
        "questions": questions,
        "shards": shards,
        "collective": collective,
        "collective_part": level_part(store, agent_id, "extraction", collective)
        if collective and agent_id
        else None,
    }
    return render(request, "ui/prompts.html", context)


def level_scope(store: MemoryStore, request: HttpRequest, agent_id: str, kind: str) -> Scope | None:
    """The scope whose prompt is edited (None: the agent default); 404 when there is none."""
    if kind not in PROMPT_KINDS:
        raise Http404("no such prompt kind")
    scope_id = request.POST.get("scope") or param(request, "scope")
    if not scope_id:
        return None
    scope = found(scope_get, store=store, scope_id=scope_id)
    if scope.agent_id != agent_id:
        raise Http404("scope not found")
    if kind == "propagation" and scope.scope_type == "collective":
        raise Http404("the collective memory does not propagate")
    return scope


def level_part(store: MemoryStore, agent_id: str, kind: str, scope: Scope | None) -> PromptPart:
    """What the resolver says this level contributes to calls (a template, or guidance)."""
    if scope is not None and prompt_role(cast(PromptKind, kind), scope) == "guidance":
        resolved = resolve_for_scope(store=store, scope=scope)["extraction"]
        assert resolved is not None
        return resolved.guidance[0]
    return resolve_template(store=store, agent_id=agent_id, kind=kind, scope=scope)


def level_help(kind: str, scope: Scope | None) -> str:
    """How this level takes part in the model's calls: shown next to the editor."""
    if kind == "extraction" and scope is not None and scope.scope_type != "individual":
        kind_of = "shard" if scope.is_shard else scope.scope_type
        section = GUIDANCE_SECTION[kind_of]
        return (
            f"Guidance, not a template. Extraction is one call for every scope of a "
            f"conversation: this text is placed under this {kind_of}'s name in the "
            f"{section} section of that one prompt. Plain text: braces are literal and "
            f"placeholders are refused. The template in effect (the agent's, or the talking "
            f"user's own) must contain {section}, or this guidance is not sent, and the "
            f"scope page says so."
            + (" A shard's guidance cannot be empty." if scope.is_shard else "")
        )
    if kind == "extraction":
        whose = "this user's conversations" if scope else "every conversation of this agent"
        return (
            f"The whole extraction prompt of {whose}"
            + ("" if scope else ", unless the user's individual scope has its own")
            + ". Groups', the collective's and shards' guidance is placed in its {groups}, "
            "{collective} and {shards} sections."
        )
    if kind == "consolidation":
        whose = "this scope" if scope else "every scope without its own override"
        return f"The whole prompt that folds pending observations into the memory of {whose}."
    whose = "this scope is" if scope else "a scope without its own override is"
    return (
        f"Used when {whose} the source of a propagation (individual → its groups, group → "
        "collective): the source scope's override, else the agent's, else the code default."
    )


def editor_context(
    request: HttpRequest,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    scope: Scope | None,
    *,
    text: str | None = None,
) -> dict[str, Any]:
    scope_id = scope.id if scope else None
    role = prompt_role(cast(PromptKind, kind), scope)
    current = prompt_current(store=store, agent_id=agent_id, kind=kind, scope_id=scope_id)
    in_effect = level_part(store, agent_id, kind, scope)
    history = prompt_history(
        store=store, agent_id=agent_id, kind=kind, scope_id=scope_id, limit=HISTORY_SHOWN
    ).items
    user_role = request_role(request)
    version = current.version if current else 0
    if text is None:
        text = current.text if current and not current.cleared else in_effect.text
    return {
        "agent_id": agent_id,
        "kind": kind,
        "scope": scope,
        "role": role,
        "help": level_help(kind, scope),
        "current": current,
        "in_effect": in_effect,
        "history": history,
        "placeholders": PLACEHOLDERS[cast(PromptKind, kind)] if role == "template" else {},
        "form": PromptForm(initial={"text": text, "expected_version": version}),
        "dry_run_form": DryRunForm(initial={"scope": scope_id or "", "user_name": "User"}),
        "check_form": CheckForm(),
        "checks": [c for c in check_list(store=store, agent_id=agent_id) if c.kind == kind],
        "sessions": recent_sessions(store=store, agent_id=agent_id) if kind == "extraction" else [],
        "expectation_types": EXPECTATION_TYPES,
        "offline": get_llm_provider().name == "offline",
        "can_edit": user_role is not None and user_role >= Role.OPERATOR,
        "level_url": level_url(agent_id, kind, scope),
        "compare": _compare(request, store, agent_id, kind, scope),
        "check_kind_types": EXPECTATIONS_BY_KIND[kind],
        # The last check run's failures, on a save of a suggested draft (`suggested`).
        "suggested": bool(request.POST.get("suggested")),
        **experiment_form_context(store, agent_id, kind, scope_id),
        # The dry run's second model: one of the price table (MEMORY_LLM_PRICES).
        "price_models": sorted(store.prices),
    } | corrections_context(store, agent_id, kind, scope, param(request, "cursor"))


def corrections_context(
    store: MemoryStore, agent_id: str, kind: str, scope: Scope | None, cursor: str | None
) -> dict[str, Any]:
    """The corrections panel: one page of this level's corrections (an agent default
    lists the whole agent's; a scope its own), through the visibility rule."""
    scope_id = scope.id if scope else None
    try:
        page = corrections_page(
            store=store,
            agent_id=agent_id,
            kind=kind,
            scope_id=scope_id,
            cursor=cursor,
            limit=CORRECTIONS_SHOWN,
        )
    except InvalidInput:  # a cursor not handed out: the first page
        page = corrections_page(
            store=store, agent_id=agent_id, kind=kind, scope_id=scope_id, limit=CORRECTIONS_SHOWN
        )
    return {"corrections": page.items, "corrections_next": page.next_cursor, "cursor": cursor}


def level_url(agent_id: str, kind: str, scope: Scope | None) -> str:
    url = reverse("ui:prompt_edit", args=[agent_id, kind])
    return f"{url}?scope={scope.id}" if scope else url


def _compare(
    request: HttpRequest, store: MemoryStore, agent_id: str, kind: str, scope: Scope | None
) -> dict[str, Any] | None:
    a, b = param(request, "a"), param(request, "b")
    if not (a and b and a.isdigit() and b.isdigit() and len(a) < 10 and len(b) < 10):
        return None
    texts = [
        prompt_version_text(store=store, agent_id=agent_id, kind=kind, version=int(v), scope=scope)
        for v in (a, b)
    ]
    return {
        "a": int(a),
        "b": int(b),
        "old": texts[0],
        "new": texts[1],
        "diff": side_by_side(texts[0] or "", texts[1] or ""),
    }


@require_GET
@role_required(Role.VIEWER)
def prompt_edit(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    context = editor_context(request, store, agent_id, kind, scope)
    if request.headers.get("HX-Request") == "true" and context["compare"]:
        return render(request, "ui/_prompt_diff.html", context)
    return render(request, "ui/prompt_edit.html", context)


@require_POST
@role_required(Role.OPERATOR)
def prompt_save_view(request: HttpRequest, agent_id: str, kind: str) -> HttpResponse:
    """Save a new version; a draft (any kind) that fails checks of its kind the prompt in
    effect passes is shown with those checks and saved only when the operator confirms."""
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    form = PromptForm(request.POST)
    conflict = False
    runs: list[Any] = []
    regressions: list[Any] = []
    if form.is_valid():
        text = form.cleaned_data["text"]
        try:
            if not request.POST.get("confirm"):
                runs = check_runs(store, agent_id, kind, scope, text)
                regressions = _blocking(runs, suggested=bool(request.POST.get("suggested")))
            if regressions:
                form.add_error("text", _blocked_message(len(regressions), request))
            else:
                entry = do_prompt_save(
                    store=store,
                    actor=actor(request),
                    agent_id=agent_id,
                    kind=kind,
                    text=text,
                    scope_id=scope.id if scope else None,
                    expected_version=form.cleaned_data["expected_version"],
                )
                what = prompt_role(cast(PromptKind, kind), scope).replace("template", "prompt")
                messages.success(request, f"Saved the {kind} {what} as version {entry.version}.")
                return redirect(level_url(agent_id, kind, scope))
        except Conflict:
            conflict = True
        except InvalidInput as exc:
            form_errors(form, exc, default_field="text")
    context = editor_context(request, store, agent_id, kind, scope)
    if conflict:
        # Keep the operator's text, now based on the newest version, so a second save
        # (after comparing with the history) goes through.
        current = context["current"]
        form = PromptForm(
            {
                "text": request.POST.get("text", ""),
                "expected_version": current.version if current else 0,
            }
        )
        form.is_valid()
        form.add_error("text", CONFLICT_MESSAGE)
    context["form"] = form
    context["regressions"] = regressions
    context["regressions_runs"] = runs if regressions else None
    messages.error(request, f"The {kind} prompt was not saved: see the error below.")
    return render(request, "ui/prompt_edit.html", context, status=422)


def _blocking(runs: list[CheckComparison], *, suggested: bool) -> list[CheckComparison]:
    """What a save must confirm: the checks the draft fails that the prompt in effect
    passes; for a draft suggested from corrections, every check it fails (the old ones
    and the ones made from the corrections)."""
    if suggested:
        return [c for c in runs if c.draft is not None and not c.draft.passed]
    return [c for c in runs if c.regressed]


def _blocked_message(count: int, request: HttpRequest) -> str:
    if request.POST.get("suggested"):
        return (
            f"This suggested draft fails {counted(count, 'check')}: a suggestion is saved "
            "only when it passes every check. Look at the checks below; save anyway only if "
            "that is what you want."
        )
    return (
        f"This draft fails {counted(count, 'check')} that the prompt in effect passes. Look "
        "at the checks below; save anyway only if that is what you want."
    )


def check_runs(
    store: MemoryStore, agent_id: str, kind: str, scope: Scope | None, text: str
) -> list[CheckComparison]:
    """The agent's checks on the draft (validated first) and on the prompt in effect."""
    draft = Draft(validate_prompt(cast(PromptKind, kind), scope, text), scope.id if scope else None)
    return checks_run(
        store=store, llm=get_llm_provider(), agent_id=agent_id, draft=draft, level=scope, kind=kind
    )


@require_POST
@role_required(Role.OPERATOR)
def prompt_revert_view(
    request: HttpRequest, agent_id: str, kind: str, version: int
) -> HttpResponse:
    store = get_store()
    scope = level_scope(store, request, agent_id, kind)
    try:
        entry = do_prompt_revert(
            store=store,
            actor=actor(request),
            agent_id=agent_id,
            kind=kind,
            version=version,
            scope_id=scope.id if scope else None,
        )
    except MemoryServiceError as exc:
        flash_error(request, exc)
    else:
        messages.success(
            request, f"Reverted the {kind} prompt to version {version} (saved as {entry.version})."
        )
    return redirect(level_url(agent_id, kind, scope))
