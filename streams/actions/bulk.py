"""Bulk actions by filter: a dry run (count and sample), or a `bulk` job that applies them."""

from __future__ import annotations

from dataclasses import dataclass

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job, Observation, Scope
from streams.memory.bulk import DEFAULT_MAX, BulkAction, BulkFilter, bulk_match, bulk_target
from streams.memory.bulk_job import DEFAULT_BATCH, bulk_payload
from streams.records.corrections import Correction, correction_of
from streams.store import MemoryStore

# A bulk action records a correction for each of its first observations: a thousand moves
# of one filter teach a prompt what fifty do (the audit entry counts them all).
MAX_BULK_CORRECTIONS = 50


@dataclass(frozen=True)
class BulkOutcome:
    matched: int
    sample: list[Observation]
    job: Job | None


def do_observations_bulk(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    bulk_filter: BulkFilter,
    action: BulkAction,
    target_scope_id: str | None = None,
    dry_run: bool = True,
    max_matched: int = DEFAULT_MAX,
    batch_size: int = DEFAULT_BATCH,
    visible_agents: frozenset[str] | None = None,
) -> BulkOutcome:
    """Match the filter; unless a dry run, freeze the match into a `bulk` job and record
    the one audit entry (the filter, the action and the count) in the same transaction."""
    target = bulk_target(
        store=store,
        agent_id=agent_id,
        action=action,
        target_scope_id=target_scope_id,
        visible_agents=visible_agents,
    )
    match = bulk_match(
        store=store,
        agent_id=agent_id,
        bulk_filter=bulk_filter,
        action=action,
        target=target,
        max_matched=max_matched,
    )
    if dry_run or not match.matched:
        return BulkOutcome(matched=match.matched, sample=match.sample, job=None)
    job = Job(
        kind="bulk",
        agent_id=agent_id,
        scope_id=bulk_filter.scope_id,
        trigger=action,
        actor=str(actor),
        payload=bulk_payload(
            bulk_filter=bulk_filter,
            action=action,
            target=target,
            match=match,
            batch_size=batch_size,
        ),
    )

    corrections = _bulk_corrections(store, actor, action, match.entries, target)

    def write(tx: ActionTx) -> None:
        tx.enqueue(job)
        tx.correct(corrections)
        tx.audit(
            action=f"observation.bulk_{action}",
            object_type="agent",
            object_id=agent_id,
            agent_id=agent_id,
            summary={
                "filter": bulk_filter.describe(),
                "action": action,
                "target_scope_id": target.id if target is not None else None,
                "count": match.matched,
                "job_id": job.id,
                "corrections": len(corrections),
            },
        )

    run_action(store, actor, write)
    return BulkOutcome(matched=match.matched, sample=match.sample, job=job)


def _bulk_corrections(
    store: MemoryStore,
    actor: Actor,
    action: BulkAction,
    entries: list[tuple[str, int, str]],
    target: Scope | None,
) -> list[Correction]:
    """The corrections of the first `MAX_BULK_CORRECTIONS` observations the bulk freezes
    (the person's decision is made here; the job applies it)."""
    ids = [ObjectId(e[2]) for e in entries[:MAX_BULK_CORRECTIONS]]
    scopes: dict[str, Scope | None] = {}
    made = []
    for observation in store.observations.get_many(ids):
        if observation.scope_id not in scopes:
            scopes[observation.scope_id] = store.scopes.get(ObjectId(observation.scope_id))
        scope = scopes[observation.scope_id]
        if scope is None:
            continue
        made.append(
            correction_of(
                store=store,
                observation=observation,
                scope=scope,
                what=action,
                actor=str(actor),
                after=observation.content if action != "delete" else None,
                target=target if action == "move" else None,
            )
        )
    return made
