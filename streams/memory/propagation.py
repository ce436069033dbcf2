"""Propagation: after a consolidation, copy what is useful beyond its scope one level up.

Individual → the user's groups; group → collective. One LLM call decides, in
the extraction JSON shape. Private observations are never offered to the model,
and an answer that reproduces one anyway is dropped. Each copy names its source
(`propagated_from`) and keeps its `related_user_ids`, so forgetting a user
reaches the copies too; a retried run skips copies that exist already.

Long because: one decision call and the copies it makes (candidates, groups, collective) are one
step with one transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import NotFound
from streams.guard.detectors import BLOCKING_FLAGS, detect
from streams.guard.erasure import REASON as ERASED
from streams.guard.erasure import erased_users, observation_users
from streams.guard.review import normalized_text, observation_release
from streams.jobs import JobRun
from streams.llm.json_answer import read_json_answer
from streams.llm.port import LLMError, LLMRequest, PropagationContext
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.consolidation_runs import describe_scope
from streams.memory.observations import observations_append
from streams.memory.requests import propagation_request
from streams.memory.scope_limits import scope_limits
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.prompts import Draft, PromptPart, resolve_template
from streams.records.activity import activity_record
from streams.records.audit import AuditSink
from streams.store import MemoryStore, StoreSession

WORD = re.compile(r"\w+")
MIN_OVERLAP = 0.5
MAX_OPEN_CANDIDATES = 50  # the oldest open candidates shown to the model and matched


@dataclass(frozen=True)
class PropagationPlan:
    """The one propagation call after a consolidation: what it offers, where, and its prompt."""

    request: LLMRequest | None  # None: nothing to offer, or nowhere to send it
    template: PromptPart
    absorbed: list[Observation]
    offered: list[Observation]
    targets: dict[str, tuple[ScopeKey, str | None]]


def propagation_plan(
    *,
    store: MemoryStore,
    source: Scope,
    version: int,
    offered: list[str] | None = None,
    draft: Draft | None = None,
) -> PropagationPlan:
    """The request for the observations consolidation `version` of `source` absorbed
    (only those in `offered`, when given: a rebuild re-derives edited ones only)."""
    entry = store.consolidations.get(ObjectId(source.id), version)
    if entry is None:
        raise NotFound("the consolidation to propagate from is gone")
    ids = entry.absorbed_observation_ids
    if offered is not None:
        ids = [i for i in ids if i in set(offered)]
    absorbed = store.observations.get_many([ObjectId(i) for i in ids])
    candidates = [o for o in absorbed if not o.private and not o.deleted and not o.is_expired()]
    targets = _targets(source)
    # The source scope's override, else the agent's, else the code default.
    template = resolve_template(
        store=store, agent_id=source.agent_id, kind="propagation", scope=source, draft=draft
    )
    request = None
    if candidates and targets:
        context = PropagationContext(
            observations=[o.content for o in candidates],
            # Group names (the prompt writes each as "group:<name>"), or "collective".
            targets=[label.removeprefix("group:") for label, _ in targets],
            source_description=describe_scope(source),
            candidates=[(o.id, o.content) for o in open_candidates(store=store, source=source)],
        )
        model = scope_limits(store=store, scope=source).propagation_model.named_model
        request = propagation_request(template=template.text, context=context, model=model)
    return PropagationPlan(request, template, absorbed, candidates, dict(targets))


def propagation_copies(
    text: str, *, source: Scope, plan: PropagationPlan
) -> list[tuple[ScopeKey, Observation]]:
    """The copies an answer asks for: known targets, close to a non-private absorbed one."""
    return _copies(text, source=source, absorbed=plan.absorbed, targets=plan.targets)


def propagation_run(*, store: MemoryStore, run: JobRun, audit: AuditSink) -> None:
    """The propagation job: one model call, its copies stored through the screen; what
    the guard blocked is an audit entry handed to `audit` (the job's action's sink,
    `streams.actions.jobs.do_propagation_run`), in the transaction of its counts."""
    job = run.job
    assert job.scope_id is not None
    source = store.scopes.get(ObjectId(job.scope_id))
    if source is None:
        raise NotFound("the consolidation to propagate from is gone")
    plan = propagation_plan(
        store=store,
        source=source,
        version=int(job.payload.get("version", 0)),
        offered=job.payload.get("observation_ids"),
    )
    if not source.is_active:
        run.result = {"copied": 0, "note": "the scope is paused"}
        return
    if plan.request is None:
        run.result = {"copied": 0, "note": "nothing to propagate"}
        return
    answer = run.llm.complete(plan.request)
    copies = propagation_copies(answer.text, source=source, plan=plan)
    outcome = _store_copies(store, source, copies, job_id=job.id, audit=audit)
    created = outcome.created
    answered = _answered_items(answer.text)
    run.result = {
        "copied": created,
        "offered": len(plan.offered),
        "dropped": max(0, answered - len(copies)),
        "model": answer.model,
        "blocked": sum(outcome.blocked.values()),
        "blocked_by": dict(sorted(outcome.blocked.items())),
        "in_review": outcome.in_review,
        "candidates": outcome.candidates,
        "supported": outcome.supported,
        "promoted": outcome.promoted,
    }
    if not answered and plan.offered:
        run.result["outcome"] = "empty"  # a valid answer, but counted (issue 39)
    for key in {key for key, _ in copies}:
        scope = store.scopes.find_by_identity(**key.identity())
        if scope is not None:
            follow_up = consolidation_due(store=store, scope_id=scope.id, trigger="propagation")
            if follow_up is not None:
                run.follow_ups.append(follow_up)


def _answered_items(text: str) -> int:
    """How many items the (already read) propagation answer holds."""
    items = read_json_answer(text, what="propagation").value.get("observations")
    return len(items) if isinstance(items, list) else 0


def _targets(source: Scope) -> list[tuple[str, tuple[ScopeKey, str | None]]]:
    if source.scope_type == "individual":
        return [
            (
                f"group:{g.get('name') or g['id']}",
                (ScopeKey.group(source.agent_id, g["id"]), g.get("name")),
            )
            for g in source.groups
        ]
    if source.scope_type == "group":
        return [("collective", (ScopeKey.collective(source.agent_id), None))]
    return []


def _copies(
    text: str,
    *,
    source: Scope,
    absorbed: list[Observation],
    targets: dict[str, tuple[ScopeKey, str | None]],
) -> list[tuple[ScopeKey, Observation]]:
    answer = read_json_answer(text, what="propagation").value
    items = answer.get("observations") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise LLMError("the propagation answer is not the expected JSON")
    lowered = {label.lower(): value for label, value in targets.items()}
    now = utcnow()
    copies: list[tuple[ScopeKey, Observation]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        content, label = item.get("content"), item.get("scope")
        if not isinstance(content, str) or not isinstance(label, str) or not content.strip():
            continue
        target = lowered.get(label.strip().lower())
        origin = _closest(content, absorbed)
        if target is None or origin is None or origin.private or origin.deleted:
            continue  # unknown target, invented content, or a private observation: never
        key, _ = target
        supports = item.get("supports")
        copies.append(
            (
                key,
                Observation(
                    scope_id="0" * 24,  # set when the target scope is known
                    agent_id=source.agent_id,
                    content=" ".join(content.split()),
                    observed_at=origin.observed_at,
                    created_at=now,
                    source_session_id=origin.source_session_id,
                    source_message_ids=list(origin.source_message_ids),
                    related_user_ids=list(origin.related_user_ids),
                    propagated_from=origin.id,
                    origin="propagation",
                    added_by=f"model:{origin.scope_id}",
                    expires_at=origin.expires_at,  # a copy of an expiring fact expires with it
                    review={"supports": supports} if isinstance(supports, str) else None,
                ),
            )
        )
    return copies


@dataclass
class _Outcome:
    created: int = 0
    blocked: dict[str, int] = field(default_factory=dict)
    in_review: int = 0
    candidates: int = 0
    supported: int = 0
    promoted: int = 0


def open_candidates(*, store: MemoryStore, source: Scope) -> list[Observation]:
    """The collective's open candidates a group's propagation may support (others' only)."""
    if source.scope_type != "group":
        return []
    collective = store.scopes.find_by_identity(**ScopeKey.collective(source.agent_id).identity())
    if collective is None:
        return []
    found = store.observations.review_page(
        agent_id=source.agent_id,
        status="candidate",
        scope_id=ObjectId(collective.id),
        reason=None,
        after=None,
        limit=MAX_OPEN_CANDIDATES,
    )
    return [
        o
        for o in found
        if source.group_id not in ((o.review or {}).get("supporting_group_ids") or [])
    ]


def _store_copies(
    store: MemoryStore,
    source: Scope,
    copies: list[tuple[ScopeKey, Observation]],
    *,
    job_id: str | None = None,
    audit: AuditSink | None = None,
) -> _Outcome:
    """Store the copies the guard lets through: one flagged `pii:*` or `secret` is never
    stored, whatever the model answered. A group's copy for the collective is a candidate
    until enough groups supply the same fact (or a person approves it); a copy of an open
    candidate's fact supports that candidate instead of being stored again."""
    outcome = _Outcome()
    by_scope: dict[str, list[Observation]] = {}
    scopes: dict[str, Scope] = {}
    # A copy about a forgotten user is never stored (erasure tombstones): counted, by why.
    erased = erased_users(
        store=store,
        agent_id=source.agent_id,
        user_ids=[u for _, o in copies for u in observation_users(source, o)],
    )
    for key, observation in copies:
        if erased & observation_users(source, observation):
            outcome.blocked[ERASED] = outcome.blocked.get(ERASED, 0) + 1
            continue
        detection = detect(observation.content)
        if detection.blocks_propagation:
            for flag in detection.flags:
                if flag in BLOCKING_FLAGS:
                    outcome.blocked[flag] = outcome.blocked.get(flag, 0) + 1
            continue
        scope, _ = scope_get_or_create(store=store, key=key)
        if not scope.is_active:
            continue  # a paused scope receives nothing new
        observation.scope_id = scope.id
        scopes[scope.id] = scope
        by_scope.setdefault(scope.id, []).append(observation)
    origins = [
        ObjectId(o.propagated_from)
        for observations in by_scope.values()
        for o in observations
        if o.propagated_from
    ]
    now = utcnow()
    min_groups = max(1, store.collective_min_groups)
    group_id = source.group_id if source.scope_type == "group" else None

    def commit(session: StoreSession) -> None:
        outcome.created = outcome.in_review = outcome.candidates = 0
        outcome.supported = outcome.promoted = 0
        existing = store.observations.copies_of(origins, session=session)
        for scope_id, observations in by_scope.items():
            scope = scopes[scope_id]
            fresh = [o for o in observations if (scope_id, o.propagated_from) not in existing]
            if group_id is not None and scope.scope_type == "collective" and min_groups > 1:
                fresh = _candidates(
                    store, scope, fresh, group_id, min_groups, session, now, outcome
                )
            if fresh:
                duplicates: dict[str, Observation] = {}  # the target holds the fact already
                observations_append(
                    store=store,
                    scope_id=scope_id,
                    observations=fresh,
                    session=session,
                    now=now,
                    duplicates=duplicates,
                    origin="propagation",
                )
                stored = [o for o in fresh if o.id not in duplicates]
                outcome.created += len(stored)
                outcome.in_review += sum(1 for o in stored if o.review_status == "in_review")
                outcome.candidates += sum(1 for o in stored if o.review_status == "candidate")
        if outcome.blocked:
            store.scopes.count_blocked(ObjectId(source.id), outcome.blocked, session=session)
        if outcome.blocked and audit is not None:
            audit(
                action="propagation.blocked",
                object_type="scope",
                object_id=source.id,
                agent_id=source.agent_id,
                summary={
                    "job_id": job_id,
                    "blocked": sum(outcome.blocked.values()),
                    "blocked_by": dict(sorted(outcome.blocked.items())),
                },
                at=now,
                session=session,
            )

    if by_scope or outcome.blocked:
        store.in_transaction(commit, attempts=5)
    if outcome.created:
        store.agents.adjust_counters(
            source.agent_id, now=now, observations=outcome.created, pending=outcome.created
        )
        activity_record(
            store=store, agent_id=source.agent_id, now=now, observations=outcome.created
        )
    return outcome


def _candidates(
    store: MemoryStore,
    collective: Scope,
    fresh: list[Observation],
    group_id: str,
    min_groups: int,
    session: StoreSession,
    now: datetime,
    outcome: _Outcome,
) -> list[Observation]:
    """A group's copies for the collective: each supports the open candidate it names (or
    whose normalized text it repeats) and promotes it once `min_groups` groups stand
    behind it; the others become candidates. Returns the copies still to store."""
    open_ = store.observations.review_page(
        agent_id=collective.agent_id,
        status="candidate",
        scope_id=ObjectId(collective.id),
        reason=None,
        after=None,
        limit=MAX_OPEN_CANDIDATES,
    )
    by_id = {o.id: o for o in open_}
    by_text = {normalized_text(o.content): o for o in open_}
    to_store: list[Observation] = []
    for copy in fresh:
        named = (copy.review or {}).get("supports")
        candidate = by_id.get(named) if isinstance(named, str) else None
        candidate = candidate or by_text.get(normalized_text(copy.content))
        if candidate is None:
            copy.review_status = "candidate"
            copy.review = {
                "reasons": ["needs_more_groups"],
                "since": now,
                "supporting_group_ids": [group_id],
            }
            by_text[normalized_text(copy.content)] = copy
            to_store.append(copy)
            continue
        if any(candidate is c for c in to_store):  # two copies of one fact in one answer
            continue
        supporters = list((candidate.review or {}).get("supporting_group_ids") or [])
        if group_id in supporters:
            continue
        supporters.append(group_id)
        store.observations.push_supporting_group(ObjectId(candidate.id), group_id, session=session)
        candidate.review = {**(candidate.review or {}), "supporting_group_ids": supporters}
        outcome.supported += 1
        if len(supporters) >= min_groups:
            _promote(store, collective, candidate, session, now)
            outcome.promoted += 1
            by_text.pop(normalized_text(candidate.content), None)
            by_id.pop(candidate.id, None)
    return to_store


def _promote(
    store: MemoryStore, collective: Scope, candidate: Observation, session: StoreSession, now
) -> None:
    """Enough groups supply the fact: into the collective memory, or to a person first
    when the scope reviews propagated copies (or the text is flagged)."""
    reasons = [r for r in (candidate.review or {}).get("reasons") or [] if r != "needs_more_groups"]
    review = {**(candidate.review or {}), "promoted_at": now}
    if collective.review_mode in ("propagated", "all") or reasons:
        review["reasons"] = list(dict.fromkeys([*reasons, "propagated"]))
        review["since"] = now
        store.observations.set_review_status(
            ObjectId(candidate.id),
            expected="candidate",
            fields={"review_status": "in_review", "review": review},
            session=session,
        )
        return
    review["reasons"] = reasons
    observation_release(
        store=store,
        observation=candidate,
        expected="candidate",
        session=session,
        now=now,
        review=review,
    )


def _closest(content: str, absorbed: list[Observation]) -> Observation | None:
    """The absorbed observation a copy was made from: the best word overlap, if close enough."""
    words = set(WORD.findall(content.lower()))
    best, best_score = None, 0.0
    for observation in absorbed:
        theirs = set(WORD.findall(observation.content.lower()))
        if not words or not theirs:
            continue
        score = len(words & theirs) / len(words | theirs)
        if score > best_score:
            best, best_score = observation, score
    return best if best_score >= MIN_OVERLAP else None
