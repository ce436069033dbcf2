"""Bulk actions by filter: a dry run (count and sample), or a `bulk` job that applies them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job, Observation, Scope, utcnow
from streams.core.exceptions import NotFound
from streams.core.ids import parse_object_id
from streams.memory.bulk import DEFAULT_MAX, BulkAction, BulkFilter, bulk_match, bulk_target
from streams.memory.bulk_job import DEFAULT_BATCH, bulk_payload
from streams.memory.bulk_undo import undo_entries
from streams.memory.review_undo import UndoExpired, UndoUnavailable
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


def bulk_job_for_undo(
    *, store: MemoryStore, bulk_job_id: str, visible_agents: frozenset[str] | None = None
) -> Job:
    """The finished bulk job an undo takes back. NotFound: unknown, not a bulk job, or of an
    agent the caller may not see; 409: still running, failed, undone already, or its
    window (`bulk_undo_seconds` after it finished) is over."""
    oid = parse_object_id(bulk_job_id)
    bulk = store.jobs.get(oid) if oid is not None else None
    if bulk is None or bulk.kind != "bulk":
        raise NotFound("bulk job not found")
    if visible_agents is not None and bulk.agent_id not in visible_agents:
        raise NotFound("bulk job not found")
    if bulk.status != "succeeded" or bulk.finished_at is None:
        raise UndoUnavailable(f"the bulk action is {bulk.status}: only a finished one is undone")
    if store.jobs.undo_job_of(ObjectId(bulk.id)) is not None:
        raise UndoUnavailable("the bulk action was undone already")
    until = bulk.finished_at + timedelta(seconds=store.bulk_undo_seconds)
    if utcnow() > until:
        raise UndoExpired(
            f"a bulk action can be undone for {store.bulk_undo_seconds} seconds after it "
            f"finished; that time ended at {until.isoformat()}"
        )
    return bulk


def do_bulk_undo(
    *,
    store: MemoryStore,
    actor: Actor,
    bulk_job_id: str,
    visible_agents: frozenset[str] | None = None,
) -> Job:
    """Take a bulk action back as one `bulk_undo` job (`streams.memory.bulk_undo`): the
    bulk job is marked undone, the job queued and the audit entry written in one
    transaction; of two undos exactly one gets the job, the other a 409."""
    bulk = bulk_job_for_undo(store=store, bulk_job_id=bulk_job_id, visible_agents=visible_agents)
    action = bulk.payload["action"]
    entries = undo_entries(store=store, bulk=bulk)
    job = Job(
        kind="bulk_undo",
        agent_id=bulk.agent_id,
        scope_id=bulk.scope_id,
        trigger=f"undo_{action}",
        actor=str(actor),
        payload={
            "bulk_job_id": bulk.id,
            "action": action,
            "target_scope_id": bulk.payload.get("target_scope_id"),
            "entries": entries,
        },
    )

    def write(tx: ActionTx) -> None:
        if not store.jobs.claim_undo(ObjectId(bulk.id), ObjectId(job.id), session=tx.session):
            raise UndoUnavailable("the bulk action was undone already")
        tx.enqueue(job)
        tx.audit(
            action="observation.bulk_undo",
            object_type="job",
            object_id=bulk.id,
            agent_id=bulk.agent_id,
            summary={"action": action, "count": len(entries), "job_id": job.id},
        )

    run_action(store, actor, write)
    return job
