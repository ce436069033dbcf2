"""Review actions: approve (optionally with an edited text) or reject what waits for a
person, one observation or a selection. The decisions, their audit entries (one per
observation: each decision is audited, and an observation's history lists its own) and
the consolidation they make due commit in one transaction; the job is dispatched after."""

from __future__ import annotations

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.forget_requests import forget_deletes
from streams.actions.supersession import supersede_in
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job, Observation
from streams.core.exceptions import Conflict, InvalidInput
from streams.guard.review import BulkResult, Decided, review_decide, review_decide_bulk
from streams.memory.forget_requests import delete_targets
from streams.memory.observation_changes import (
    observation_update_plan,
    observation_update_write,
)
from streams.memory.review_undo import review_undo
from streams.records.corrections import Correction, correction_of
from streams.store import MemoryStore


def do_review_decide(
    *,
    store: MemoryStore,
    actor: Actor,
    observation: Observation,
    decision: str,
    content: str | None = None,
    note: str | None = None,
    follow_ups: list[Job] | None = None,
) -> Observation:
    """One decision; `NotInReview` (409 `not_in_review`) when it is not waiting (any more).
    With `follow_ups` its job is handed there instead of to the runner. `supersede`
    (a contradiction's newer side, `contradicts:<id>`): approve it, and the older one
    it contradicts is superseded by it (409 when that one is no longer current)."""
    older_id = _contradicted(observation) if decision == "supersede" else None

    def write(tx: ActionTx) -> Observation:
        decided: list[Decided] = []
        jobs: list[Job] = []
        result = review_decide(
            store=store,
            observation=observation,
            decision="approve" if older_id else decision,
            actor=str(actor),
            content=content,
            note=note,
            follow_ups=jobs,
            session=tx.session,
            decided=decided,
        )
        _apply_edits(store, tx, decided, actor)
        _apply_forgets(store, tx, decided)
        _record(tx, decided, jobs)
        if older_id:
            _supersede(store, tx, older_id=older_id, newer=result)
        return result

    return run_action(store, actor, write, follow_ups=follow_ups)


def _apply_forgets(store: MemoryStore, tx: ActionTx, decided: list[Decided]) -> None:
    """Approved forget requests (`delete_of`): their targets deleted in the decision's
    transaction, each audited."""
    for one in decided:
        ids = one.summary.get("delete_of")
        if ids and one.action == "observation.review_approve":
            targets = delete_targets(store, ids)
            forget_deletes(store, tx, targets, review_id=one.observation.id)


def _contradicted(observation: Observation) -> str:
    """The older observation a waiting contradiction names (`contradicts:<id>`)."""
    for reason in (observation.review or {}).get("reasons") or []:
        if isinstance(reason, str) and reason.startswith("contradicts:"):
            return reason.split(":", 1)[1]
    raise InvalidInput(
        "only a contradiction waiting for review can supersede", details=[{"field": "decision"}]
    )


def _supersede(store: MemoryStore, tx: ActionTx, *, older_id: str, newer: Observation) -> None:
    older = store.observations.get(ObjectId(older_id)) if ObjectId.is_valid(older_id) else None
    if older is None:
        raise Conflict("the observation it contradicts is gone")
    supersede_in(tx, store=store, older=older, newer=newer, review=True)


def do_review_decide_bulk(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    ids: list[str],
    decision: str,
    note: str | None = None,
) -> BulkResult:
    """Decide a selection of one agent's queue; what is not waiting is `skipped`."""

    def write(tx: ActionTx) -> BulkResult:
        decided: list[Decided] = []
        jobs: list[Job] = []
        result = review_decide_bulk(
            store=store,
            agent_id=agent_id,
            ids=ids,
            decision=decision,
            actor=str(actor),
            note=note,
            follow_ups=jobs,
            session=tx.session,
            decided=decided,
        )
        _apply_edits(store, tx, decided, actor)
        _apply_forgets(store, tx, decided)
        _record(tx, decided, jobs)
        return result

    return run_action(store, actor, write)


def do_review_undo(*, store: MemoryStore, actor: Actor, observation: Observation) -> Observation:
    """Take a decision back within `MEMORY_REVIEW_UNDO_SECONDS`: the observation waits
    again as it did; an approval's pending entry and search postings leave with it. 409
    `undo_expired` after the window, `undo_unavailable` when it cannot be undone."""

    def write(tx: ActionTx) -> Observation:
        one = review_undo(
            store=store, observation=observation, actor=str(actor), session=tx.session
        )
        _record(tx, [one], [])
        return one.observation

    return run_action(store, actor, write)


def _record(tx: ActionTx, decided: list[Decided], jobs: list[Job]) -> None:
    """Each decision's audit entry; a rejection is a correction too (its note the reason)."""
    for one in decided:
        if one.action == "observation.review_reject":
            tx.correct(_rejection(tx, one))
        tx.audit(
            action=one.action,
            object_type="observation",
            object_id=one.observation.id,
            agent_id=one.observation.agent_id,
            summary=one.summary,
        )
    for job in jobs:
        tx.schedule(job)


def _rejection(tx: ActionTx, one: Decided) -> list[Correction]:
    scope = tx.store.scopes.get(ObjectId(one.observation.scope_id), session=tx.session)
    if scope is None:
        return []
    correction = correction_of(
        store=tx.store,
        observation=one.observation,
        scope=scope,
        what="reject",
        actor=str(tx.actor),
        reason=one.summary.get("note"),
    )
    return [correction]


def _apply_edits(store: MemoryStore, tx: ActionTx, decided: list[Decided], actor: Actor) -> None:
    """Approved held edits (`edit_of`): their text applied to the observation they change,
    in the decision's transaction (the person's decision is the review the edit waited
    for), with the edit's `source_change` follow-up job (the outbox; it sends the
    rebuilds); an observation deleted meanwhile makes the decision a conflict."""
    for one in decided:
        target_id = one.summary.get("edit_of")
        if not target_id or one.action != "observation.review_approve":
            continue
        target = store.observations.get(ObjectId(target_id))
        scope = store.scopes.get(ObjectId(one.observation.scope_id), session=tx.session)
        if target is None or scope is None:
            raise Conflict("the observation this edit changes is gone")
        plan = observation_update_plan(
            observation=target,
            scope_type=scope.scope_type,
            content=one.observation.content,
            reviewed=True,
        )
        follow_up = observation_update_write(
            store=store, plan=plan, actor=str(actor), session=tx.session
        )
        if "content" in plan.fields:
            edit = correction_of(
                store=store,
                observation=target,
                scope=scope,
                what="edit",
                actor=str(actor),
                after=str(plan.fields["content"]),
                reason=one.summary.get("note"),
            )
            tx.correct([edit])
        if follow_up is not None:
            tx.schedule(follow_up.job)
