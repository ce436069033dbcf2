"""Review actions: approve (optionally with an edited text) or reject what waits for a
person, one observation or a selection. The decision and its audit entry commit in one
transaction (`streams.review`); the consolidation it may make due is scheduled after."""

from __future__ import annotations

from streams.actions.base import Actor, schedule
from streams.documents import Job, Observation
from streams.review import BulkResult, review_decide, review_decide_bulk
from streams.store import MemoryStore


def do_review_decide(
    *,
    store: MemoryStore,
    actor: Actor,
    observation: Observation,
    decision: str,
    content: str | None = None,
    note: str | None = None,
) -> Observation:
    """One decision; `NotInReview` (409 `not_in_review`) when it is not waiting (any more)."""
    jobs: list[Job] = []
    decided = review_decide(
        store=store,
        observation=observation,
        decision=decision,
        actor=str(actor),
        content=content,
        note=note,
        follow_ups=jobs,
    )
    schedule(jobs)
    return decided


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
    jobs: list[Job] = []
    result = review_decide_bulk(
        store=store,
        agent_id=agent_id,
        ids=ids,
        decision=decision,
        actor=str(actor),
        note=note,
        follow_ups=jobs,
    )
    schedule(jobs)
    return result
