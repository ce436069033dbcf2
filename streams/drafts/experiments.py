"""Prompt experiments: a draft beside the prompt in effect over a scope's recent real inputs.

The inputs are the scope's last N sessions (extraction), its recent pending sets (the
set pending now, then the sets its latest versions folded: consolidation) or what its
latest versions absorbed (propagation). Each input runs on both sides through the real
request builders (`streams.drafts.experiment_units`), in a background job, within a
token budget: before each input the most it can cost (its requests' prompts and answer
caps) is weighed against what is left, and the run stops at the cap, saying what it
covered. A failed call is recorded for its input and the run goes on. Nothing here
writes memory: the one document written is the experiment's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from streams.core.documents import PromptKind, Scope, utcnow
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.drafts.experiment_totals import experiment_summary, skipped_side
from streams.drafts.experiment_units import (
    PendingSet,
    consolidation_requests,
    consolidation_side,
    extraction_requests,
    extraction_side,
    observations_by_id,
    propagation_requests,
    propagation_side,
    request_tokens,
    routing_changes,
)
from streams.jobs import JobRun
from streams.memory.scopes import scope_get
from streams.prompts import Draft, prompt_role, resolve_template, validate_template
from streams.records.usage import price_of
from streams.selectors import agent_get
from streams.store import MemoryStore

EXPERIMENT_KINDS: tuple[PromptKind, ...] = ("extraction", "consolidation", "propagation")
MAX_SESSIONS = 50
MAX_BUDGET_TOKENS = 5_000_000
STOPPED_BUDGET = "budget"


@dataclass(frozen=True)
class ExperimentInput:
    """A validated request for an experiment (what `do_prompt_experiment_start` stores)."""

    agent_id: str
    kind: PromptKind
    scope: Scope
    draft: Draft
    sessions: int
    budget_tokens: int


@dataclass(frozen=True)
class Unit:
    """One input to run on both sides: a session, a pending set or a version."""

    label: str
    session_id: str | None = None
    version: int | None = None
    pending: PendingSet | None = None
    # Whom its words are about (a session's speakers, its observations' people): forgetting
    # one of them scrubs the input (`PromptExperimentRepository.forget_user`).
    user_ids: tuple[str, ...] = ()
    propagated: tuple[str, ...] = ()  # propagation: the observations it offers

    @property
    def source_ids(self) -> list[str]:
        if self.pending:
            return [o.id for o in self.pending.observations]
        return list(self.propagated)


def experiment_input(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    scope_id: str,
    draft: str,
    sessions: int,
    budget_tokens: int,
) -> ExperimentInput:
    """Check every field (422 naming it; 404 for an unknown agent or scope)."""
    agent_get(store=store, agent_id=agent_id)
    if kind not in EXPERIMENT_KINDS:
        raise InvalidInput(f"unknown prompt kind {kind!r}", details=[{"field": "kind"}])
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=frozenset({agent_id}))
    if not 1 <= sessions <= MAX_SESSIONS:
        raise InvalidInput(
            f"sessions must be between 1 and {MAX_SESSIONS}", details=[{"field": "sessions"}]
        )
    if not 1 <= budget_tokens <= MAX_BUDGET_TOKENS:
        raise InvalidInput(
            f"budget_tokens must be between 1 and {MAX_BUDGET_TOKENS}",
            details=[{"field": "budget_tokens"}],
        )
    try:
        text = validate_template(kind, draft)
    except InvalidInput as exc:
        raise InvalidInput(exc.message, details=[{"field": "draft"}]) from exc
    prompt_kind: PromptKind = kind
    return ExperimentInput(
        agent_id=agent_id,
        kind=prompt_kind,
        scope=scope,
        draft=experiment_draft(store=store, kind=prompt_kind, scope=scope, text=text),
        sessions=sessions,
        budget_tokens=budget_tokens,
    )


def experiment_draft(*, store: MemoryStore, kind: PromptKind, scope: Scope, text: str) -> Draft:
    """The draft stands where the template in effect for the scope is saved: the scope's
    own override when it has one, else the agent's default."""
    in_effect = resolve_template(store=store, agent_id=scope.agent_id, kind=kind, scope=scope)
    own = in_effect.source == "scope" and prompt_role(kind, scope) == "template"
    return Draft(text, scope.id if own else None)


def experiment_units(*, store: MemoryStore, scope: Scope, kind: str, limit: int) -> list[Unit]:
    """The inputs, newest first, at most `limit`."""
    if kind == "extraction":
        return [
            Unit(
                label=f"session {b['session_id']}",
                session_id=str(b["session_id"]),
                user_ids=_people(b.get("speaker_ids"), [b.get("user_id")]),
            )
            for b in _recent_sessions(store, scope, limit)
        ]
    if kind == "consolidation":
        return _pending_sets(store, scope, limit)
    versions = store.consolidations.page(
        scope_id=ObjectId(scope.id), below_version=scope.consolidation_version + 1, limit=limit
    )
    units = []
    for v in versions:
        offered = observations_by_id(store, v.absorbed_observation_ids)
        if offered:
            people = _people(*(o.related_user_ids for o in offered))
            ids = tuple(o.id for o in offered)
            label = f"version {v.version}"
            units.append(Unit(label=label, version=v.version, user_ids=people, propagated=ids))
    return units


def _people(*groups: Any) -> tuple[str, ...]:
    """The distinct user ids of `groups` (lists of ids, None left out), in order."""
    return tuple(dict.fromkeys(str(u) for g in groups for u in g or [] if u))


def _recent_sessions(store: MemoryStore, scope: Scope, limit: int) -> list[dict[str, Any]]:
    samples = store.session_samples
    if scope.scope_type == "individual" and scope.user_id:
        return samples.recent_of_speaker(scope.agent_id, scope.user_id, limit=limit)
    if scope.scope_type == "group" and scope.group_id:
        return samples.recent_of_group(scope.agent_id, scope.group_id, limit=limit)
    return samples.recent(scope.agent_id, limit=limit)


def _pending_sets(store: MemoryStore, scope: Scope, limit: int) -> list[Unit]:
    """The set pending now, then each recent version's: the text before it and what it
    folded that is still live (a version whose text was redacted is left out)."""
    versions = store.consolidations.page(
        scope_id=ObjectId(scope.id), below_version=scope.consolidation_version + 1, limit=limit + 1
    )
    by_version = {v.version: v for v in versions}
    units: list[Unit] = []
    if scope.pending_observation_ids:
        latest = by_version.get(scope.consolidation_version)
        pending = PendingSet(
            label="pending now",
            version=None,
            previous=scope.consolidation,
            observations=observations_by_id(store, scope.pending_observation_ids),
            previous_coverage=latest.coverage if latest else [],
        )
        if pending.observations:
            people = _people(*(o.related_user_ids for o in pending.observations))
            units.append(Unit(label="pending now", pending=pending, user_ids=people))
    for entry in versions:
        before = by_version.get(entry.version - 1)
        if entry.version > 1 and (before is None or before.redacted):
            continue
        folded = observations_by_id(store, entry.absorbed_observation_ids)
        if not folded or entry.redacted:
            continue
        label = f"version {entry.version}"
        pending = PendingSet(
            label=label,
            version=entry.version,
            previous=before.text if before else None,
            observations=folded,
            previous_coverage=before.coverage if before else [],
        )
        people = _people(*(o.related_user_ids for o in folded))
        units.append(Unit(label=label, version=entry.version, pending=pending, user_ids=people))
    return units[:limit]


def unit_requests_tokens(
    *, store: MemoryStore, scope: Scope, kind: str, unit: Unit, draft: Draft | None
) -> tuple[int, int]:
    """(calls, tokens) at most of one side on one input; (0, 0) when it has nothing to run."""
    try:
        if kind == "extraction":
            assert unit.session_id is not None
            requests = extraction_requests(
                store=store, agent_id=scope.agent_id, session_id=unit.session_id, draft=draft
            )
        elif kind == "consolidation":
            assert unit.pending is not None
            requests = consolidation_requests(
                store=store, scope=scope, pending=unit.pending, draft=draft
            )
        else:
            assert unit.version is not None
            requests = propagation_requests(
                store=store, scope=scope, version=unit.version, draft=draft
            )
    except (InvalidInput, NotFound):
        return 0, 0
    return len(requests), sum(request_tokens(r) for r in requests)


def experiment_estimate(*, store: MemoryStore, given: ExperimentInput) -> dict[str, Any]:
    """What the run would cost at most, both sides, before a token is spent."""
    units = experiment_units(store=store, scope=given.scope, kind=given.kind, limit=given.sessions)
    calls = tokens = within = 0
    per_unit = []
    for unit in units:
        unit_calls, unit_tokens = _unit_cost(store, given.scope, given.kind, unit, given.draft)
        calls += unit_calls
        tokens += unit_tokens
        within += tokens <= given.budget_tokens
        per_unit.append({"label": unit.label, "calls": unit_calls, "estimated_tokens": unit_tokens})
    return {
        "per_unit": per_unit,
        "units": len(units),
        "calls": calls,
        "estimated_tokens": tokens,
        "estimated_cost_micro_usd": _cost_bound(store, tokens),
        "budget_tokens": given.budget_tokens,
        "within_budget": tokens <= given.budget_tokens,
        "units_within_budget": within,
    }


def _unit_cost(
    store: MemoryStore, scope: Scope, kind: str, unit: Unit, draft: Draft
) -> tuple[int, int]:
    """(calls, tokens) at most of one input, both sides."""
    ours = unit_requests_tokens(store=store, scope=scope, kind=kind, unit=unit, draft=draft)
    theirs = unit_requests_tokens(store=store, scope=scope, kind=kind, unit=unit, draft=None)
    return ours[0] + theirs[0], ours[1] + theirs[1]


def _cost_bound(store: MemoryStore, tokens: int) -> int | None:
    """The dearest priced model's cost of `tokens` (each at its dearer rate), or None."""
    prices = getattr(store, "prices", {}) or {}
    costs = [price_of(prices, model, tokens, 0) for model in prices] + [
        price_of(prices, model, 0, tokens) for model in prices
    ]
    known = [c for c in costs if c is not None]
    return max(known) if known else None


def experiment_run(*, store: MemoryStore, run: JobRun) -> None:
    """The work of a `prompt_experiment` job: every input on both sides, within budget."""
    oid = require_object_id(str(run.job.payload.get("experiment_id", "")), what="experiment")
    doc = store.prompt_experiments.get(oid)
    if doc is None:
        raise NotFound("experiment not found")
    scope = store.scopes.get(ObjectId(doc["scope_id"]))
    if scope is None:
        summary = {"error": "the scope is gone", "covered": 0, "planned": 0}
        store.prompt_experiments.finish(oid, status="failed", summary=summary, now=utcnow())
        run.result = {"experiment_id": str(oid), **summary}
        return
    store.prompt_experiments.reset_units(oid)
    store.prompt_experiments.mark_running(oid, job_id=run.job.id, now=utcnow())
    draft = Draft(doc["draft"], doc.get("draft_scope_id"))
    try:
        summary = run_units(
            store=store,
            scope=scope,
            kind=doc["kind"],
            units=experiment_units(
                store=store, scope=scope, kind=doc["kind"], limit=doc["sessions"]
            ),
            draft=draft,
            budget=doc["budget_tokens"],
            llm=run.llm,
            keep=lambda unit: store.prompt_experiments.record_unit(oid, unit),
        )
    except Exception as exc:
        # The job fails and is retried; the page says why meanwhile.
        failed = {"error": str(exc) or type(exc).__name__, "covered": 0, "planned": 0}
        store.prompt_experiments.finish(oid, status="failed", summary=failed, now=utcnow())
        raise
    store.prompt_experiments.finish(oid, status="succeeded", summary=summary, now=utcnow())
    run.result = {"experiment_id": str(oid), **{k: summary[k] for k in _RESULT_KEYS}}


_RESULT_KEYS = ("planned", "covered", "stopped", "failed_units", "spent_tokens")


def run_units(
    *,
    store: MemoryStore,
    scope: Scope,
    kind: str,
    units: list[Unit],
    draft: Draft,
    budget: int,
    llm: Any,
    keep: Callable[[dict[str, Any]], object],
) -> dict[str, Any]:
    """Run each input on both sides until the budget would be passed; the totals."""
    spent = 0
    outcomes: list[dict[str, Any]] = []
    stopped = None
    for index, unit in enumerate(units):
        _calls, most = _unit_cost(store, scope, kind, unit, draft)
        if spent + most > budget:
            stopped = STOPPED_BUDGET
            break
        outcome = _run_unit(store, scope, kind, unit, draft, llm)
        outcome |= {"index": index, "estimated_tokens": most}
        spent += outcome["tokens"]
        outcomes.append(outcome)
        keep(outcome)
    return experiment_summary(outcomes, planned=len(units), stopped=stopped, budget=budget)


def _run_unit(
    store: MemoryStore, scope: Scope, kind: str, unit: Unit, draft: Draft, llm: Any
) -> dict[str, Any]:
    def side(which: Draft | None) -> dict[str, Any]:
        try:
            if kind == "extraction":
                assert unit.session_id is not None
                return extraction_side(
                    store=store,
                    llm=llm,
                    agent_id=scope.agent_id,
                    session_id=unit.session_id,
                    draft=which,
                )
            if kind == "consolidation":
                assert unit.pending is not None
                return consolidation_side(
                    store=store, llm=llm, scope=scope, pending=unit.pending, draft=which
                )
            assert unit.version is not None
            return propagation_side(
                store=store, llm=llm, scope=scope, version=unit.version, draft=which
            )
        except (InvalidInput, NotFound) as exc:
            return skipped_side(exc.message)

    ours, theirs = side(draft), side(None)
    tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in (ours, theirs))
    return {
        "label": unit.label,
        "session_id": unit.session_id,
        "version": unit.version,
        "source_ids": unit.source_ids,
        "user_ids": list(unit.user_ids),
        "draft": ours,
        "in_effect": theirs,
        "routing_changes": routing_changes(ours, theirs),
        "tokens": tokens,
        "failed": bool(ours["error"] or theirs["error"]),
    }
