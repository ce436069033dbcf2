"""Propagation: after a consolidation, copy what is useful beyond its scope one level up.

Individual → the user's groups; group → collective. One LLM call decides, in
the extraction JSON shape. Private observations are never offered to the model,
and an answer that reproduces one anyway is dropped. Each copy names its source
(`propagated_from`) and keeps its `related_user_ids`, so forgetting a user
reaches the copies too; a retried run skips copies that exist already.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from bson import ObjectId

from streams.activity import activity_record
from streams.consolidation_runs import consolidation_due, describe_scope
from streams.documents import Observation, Scope, utcnow
from streams.exceptions import NotFound
from streams.jobs import JobRun
from streams.llm.port import LLMError, LLMRequest, PropagationContext
from streams.observations import observations_append
from streams.prompts import Draft, PromptPart, render_propagation, resolve_template
from streams.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore, StoreSession

WORD = re.compile(r"\w+")
MIN_OVERLAP = 0.5


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
            targets=[label for label, _ in targets],
            source_description=describe_scope(source),
        )
        request = LLMRequest(
            task="propagation",
            prompt=render_propagation(template.text, context),
            context=context,
            json_output=True,
            tier="fast",
        )
    return PropagationPlan(request, template, absorbed, candidates, dict(targets))


def propagation_copies(
    text: str, *, source: Scope, plan: PropagationPlan
) -> list[tuple[ScopeKey, Observation]]:
    """The copies an answer asks for: known targets, close to a non-private absorbed one."""
    return _copies(text, source=source, absorbed=plan.absorbed, targets=plan.targets)


def propagation_run(*, store: MemoryStore, run: JobRun) -> None:
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
    created = _store_copies(store, source, copies)
    run.result = {"copied": created, "offered": len(plan.offered), "model": answer.model}
    for key in {key for key, _ in copies}:
        scope = store.scopes.find_by_identity(**key.identity())
        if scope is not None:
            follow_up = consolidation_due(store=store, scope_id=scope.id, trigger="propagation")
            if follow_up is not None:
                run.follow_ups.append(follow_up)


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
    try:
        answer = json.loads(text)
        items = answer["observations"]
        assert isinstance(items, list)
    except (ValueError, TypeError, KeyError, AssertionError) as exc:
        raise LLMError("the propagation answer is not the expected JSON") from exc
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
                    expires_at=origin.expires_at,  # a copy of an expiring fact expires with it
                ),
            )
        )
    return copies


def _store_copies(
    store: MemoryStore, source: Scope, copies: list[tuple[ScopeKey, Observation]]
) -> int:
    by_scope: dict[str, list[Observation]] = {}
    for key, observation in copies:
        scope, _ = scope_get_or_create(store=store, key=key)
        if not scope.is_active:
            continue  # a paused scope receives nothing new
        observation.scope_id = scope.id
        by_scope.setdefault(scope.id, []).append(observation)
    if not by_scope:
        return 0
    origins = [
        ObjectId(o.propagated_from)
        for observations in by_scope.values()
        for o in observations
        if o.propagated_from
    ]
    now = utcnow()
    created = 0

    def commit(session: StoreSession) -> None:
        nonlocal created
        existing = store.observations.copies_of(origins, session=session)
        created = 0
        for scope_id, observations in by_scope.items():
            fresh = [o for o in observations if (scope_id, o.propagated_from) not in existing]
            if fresh:
                duplicates: dict[str, Observation] = {}  # the target holds the fact already
                observations_append(
                    store=store,
                    scope_id=scope_id,
                    observations=fresh,
                    session=session,
                    now=now,
                    duplicates=duplicates,
                )
                created += len(fresh) - len(duplicates)

    store.in_transaction(commit, attempts=5)
    if created:
        store.agents.adjust_counters(
            source.agent_id, now=now, observations=created, pending=created
        )
        activity_record(store=store, agent_id=source.agent_id, now=now, observations=created)
    return created


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
