"""Review actions: approve (optionally with an edited text) or reject what waits for a
person, one observation or a selection. The decisions, their audit entries (one per
observation: each decision is audited, and an observation's history lists its own) and
the consolidation they make due commit in one transaction; the job is dispatched after."""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job, Observation
from streams.guard.review import BulkResult, Decided, review_decide, review_decide_bulk
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
    With `follow_ups` its job is handed there instead of to the runner."""

    def write(tx: ActionTx) -> Observation:
        decided: list[Decided] = []
        jobs: list[Job] = []
        result = review_decide(
            store=store,
            observation=observation,
            decision=decision,
            actor=str(actor),
            content=content,
            note=note,
            follow_ups=jobs,
            session=tx.session,
            decided=decided,
        )
        _record(tx, decided, jobs)
        return result

    return run_action(store, actor, write, follow_ups=follow_ups)


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
        _record(tx, decided, jobs)
        return result

    return run_action(store, actor, write)


def _record(tx: ActionTx, decided: list[Decided], jobs: list[Job]) -> None:
    for one in decided:
        tx.audit(
            action=one.action,
            object_type="observation",
            object_id=one.observation.id,
            agent_id=one.observation.agent_id,
            summary=one.summary,
        )
    for job in jobs:
        tx.schedule(job)
