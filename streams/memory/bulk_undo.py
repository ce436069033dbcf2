"""Undoing a bulk action (`streams.memory.bulk_job`) for a while after it finished
(`MemoryStore.bulk_undo_seconds`, the setting `MEMORY_BULK_UNDO_SECONDS`): one
`bulk_undo` job, batch by batch like the bulk job itself, then one rebuild per scope
whose consolidation changes (and a threshold check where observations went back to pending).

What it takes back, frozen when the undo is asked for (`undo_entries`):
- a delete: the observations this bulk job deleted (deleted between its creation and its
  end, not purged since) are written again, as new observations with the old ones'
  text, times and provenance, through the one way in (`observations_append`, origin
  `restore`): screened for the scope's rules again, never twice (dedup), and never for
  a user forgotten since (the tombstone wins: the erasure check of the append);
- a move: those still in the target are moved back to the scope they came from (the
  move's own batch, `bulk_apply_batch`, so the source's screen and dedup apply);
- mark private: those still private are public again, and those a consolidation had
  absorbed go back to pending (marking private rebuilt the memory without their text).

Each batch and the job's progress commit in one transaction, so a run killed halfway
resumes at the first batch not committed and no batch is applied twice.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.core.documents import Job, Observation, utcnow
from streams.core.exceptions import Conflict
from streams.guard.erasure import without_erased
from streams.jobs import JobRun
from streams.memory.add_writes import counters_add
from streams.memory.bulk_job import bulk_apply_batch
from streams.memory.consolidation import pending_again
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.observations import observations_append
from streams.memory.rebuild import rebuild_due
from streams.store import MemoryStore, StoreSession
from streams.store.bulk import BulkRepository

UNDO_BATCH = 200


def undo_entries(*, store: MemoryStore, bulk: Job) -> list[list[str | int]]:
    """What an undo of `bulk` takes back: `[scope now, seq now, id, scope it returns to]`,
    by the scope it returns to, then where it is, then its place."""
    payload = bulk.payload
    action = payload["action"]
    home = {str(e[2]): str(e[0]) for e in payload.get("entries") or []}
    found = store.observations.get_many([ObjectId(i) for i in home])
    if action == "delete":
        end = bulk.finished_at or utcnow()
        back = [
            o
            for o in found
            if o.deleted_at is not None and bulk.created_at <= o.deleted_at <= end and o.content
        ]
    elif action == "private":
        back = [o for o in found if not o.deleted and o.private and o.scope_id == home[o.id]]
    else:
        target = payload.get("target_scope_id")
        back = [o for o in found if not o.deleted and o.scope_id == target]
    entries: list[list[str | int]] = [[o.scope_id, o.seq, o.id, home[o.id]] for o in back]
    return sorted(entries, key=lambda e: (str(e[3]), str(e[0]), int(e[1])))


def bulk_undo_state(*, store: MemoryStore, job: Job) -> tuple[datetime | None, str | None]:
    """For a bulk job's page: until when it can be undone (None: not now) and the job
    that undid it (None: none did)."""
    if job.kind != "bulk":
        return None, None
    undone_by = store.jobs.undo_job_of(ObjectId(job.id))
    if undone_by is not None or job.status != "succeeded" or job.finished_at is None:
        return None, undone_by
    until = job.finished_at + timedelta(seconds=store.bulk_undo_seconds)
    return (until if until > utcnow() else None), None


def _batch_end(entries: list[list[Any]], start: int) -> int:
    """At most UNDO_BATCH entries, all in one scope and returning to one scope."""
    end = start
    first = entries[start]
    while (
        end < len(entries)
        and end - start < UNDO_BATCH
        and (entries[end][0], entries[end][3]) == (first[0], first[3])
    ):
        end += 1
    return end


def bulk_undo_run(*, store: MemoryStore, run: JobRun) -> None:
    """The work of a `bulk_undo` job: the batches not done yet, then the follow-ups."""
    payload = run.job.payload
    action: str = payload["action"]
    entries: list[list[Any]] = payload["entries"]
    repo = store.bulk
    job_oid = ObjectId(run.job.id)
    start = resumed_at = int(repo.progress(job_oid).get("done") or 0)
    while start < len(entries):
        end = _batch_end(entries, start)
        part = entries[start:end]
        if action == "move":
            bulk_apply_batch(
                store=store,
                repo=repo,
                job_oid=job_oid,
                action="move",
                entries=[e[:3] for e in part],
                done_before=start,
                target_id=str(part[0][3]),
            )
        elif action == "private":
            _public_batch(store=store, repo=repo, job_oid=job_oid, entries=part, done_before=start)
        else:
            _restore_batch(store=store, repo=repo, job_oid=job_oid, entries=part, done_before=start)
        start = end
    progress = repo.progress(job_oid)
    rebuild_ids = sorted(progress.get("scope_ids") or [])
    for scope_id in rebuild_ids:
        rebuild = rebuild_due(store=store, scope_id=scope_id, trigger=f"bulk_undo_{action}")
        if rebuild is not None:
            run.follow_ups.append(rebuild)
    if action in ("delete", "move", "private"):  # back to pending: a threshold may be reached
        for scope_id in sorted({str(e[3]) for e in entries}):
            due = consolidation_due(store=store, scope_id=scope_id, trigger="threshold")
            if due is not None:
                run.follow_ups.append(due)
    run.result = {
        "action": action,
        "bulk_job_id": payload.get("bulk_job_id"),
        "matched": len(entries),
        "undone": int(progress.get("applied") or 0),
        "resumed_at": resumed_at,
        "rebuild_scope_ids": rebuild_ids,
    }


def _advance(
    repo: BulkRepository,
    job_oid: ObjectId,
    *,
    done_before: int,
    count: int,
    applied: int,
    scope_ids: list[str],
    session: StoreSession,
) -> None:
    if not repo.advance(
        job_oid,
        expected_done=done_before,
        done=done_before + count,
        applied=applied,
        scope_ids=scope_ids,
        session=session,
    ):
        raise Conflict("another run applied this batch")


def _public_batch(
    *,
    store: MemoryStore,
    repo: BulkRepository,
    job_oid: ObjectId,
    entries: list[list[Any]],
    done_before: int,
) -> None:
    """Those of one scope still private, public again. Marking private rebuilt the memory
    without a consolidated one's text: it goes back to pending, so the next fold states
    it again (one whose rebuild has not run yet stays flagged: that rebuild folds it)."""
    scope_id = str(entries[0][0])
    wanted = {str(e[2]) for e in entries}
    found = [
        o
        for o in repo.at_seqs(ObjectId(scope_id), [int(e[1]) for e in entries])
        if o.id in wanted and not o.deleted and o.private
    ]

    def write(session: StoreSession) -> None:
        ids = [ObjectId(o.id) for o in found]
        applied = repo.mark_public(ids, session=session)
        scope = store.scopes.get(ObjectId(scope_id), session=session)
        if scope is not None:
            # Not those pending already (a restore put them back) or still to be rebuilt.
            staying = {*scope.rebuild_observation_ids, *scope.pending_observation_ids}
            absorbed = repo.absorbed_among(ids, session=session)
            back = [i for i in absorbed if str(i) not in staying]
            pending_again(store=store, scope=scope, ids=back, session=session)
        _advance(
            repo,
            job_oid,
            done_before=done_before,
            count=len(entries),
            applied=applied,
            scope_ids=[],
            session=session,
        )

    store.in_transaction(write, attempts=5)


def _restored(observation: Observation, now: datetime) -> Observation:
    """A new observation with the deleted one's text, times and provenance."""
    return Observation(
        scope_id=observation.scope_id,
        agent_id=observation.agent_id,
        content=observation.content,
        observed_at=observation.observed_at,
        created_at=now,
        source_session_id=observation.source_session_id,
        source_message_ids=list(observation.source_message_ids),
        related_user_ids=list(observation.related_user_ids),
        private=observation.private,
        propagated_from=observation.propagated_from,
        origin="restore",
        added_by=observation.added_by,
    )


def _restore_batch(
    *,
    store: MemoryStore,
    repo: BulkRepository,
    job_oid: ObjectId,
    entries: list[list[Any]],
    done_before: int,
) -> None:
    """Those of one scope the bulk deleted, written again through the way in: what a
    tombstone covers is refused, a text the scope holds live again is not stored twice."""
    scope_id = str(entries[0][0])
    now = utcnow()
    olds = store.observations.get_many([ObjectId(str(e[2])) for e in entries])
    copies = [_restored(o, now) for o in olds if o.deleted]

    def write(session: StoreSession) -> None:
        scope = store.scopes.get(ObjectId(scope_id), session=session)
        repo.release_text_keys([ObjectId(o.id) for o in olds if o.deleted], session=session)
        fresh: list[Observation] = []
        if scope is not None and copies:
            kept, _refused = without_erased(
                store=store, scope=scope, observations=[replace(c) for c in copies],
                session=session,
            )  # fmt: skip
            duplicates: dict[str, Observation] = {}
            if kept:
                observations_append(
                    store=store,
                    scope_id=scope_id,
                    observations=kept,
                    session=session,
                    now=now,
                    duplicates=duplicates,
                    origin="restore",
                )
            fresh = [o for o in kept if o.id not in duplicates]
            if fresh:
                counters_add(
                    store=store, agent_id=scope.agent_id, added=len(fresh), now=now,
                    session=session,
                )  # fmt: skip
        _advance(
            repo,
            job_oid,
            done_before=done_before,
            count=len(entries),
            applied=len(fresh),
            scope_ids=[],
            session=session,
        )

    store.in_transaction(write, attempts=5)
