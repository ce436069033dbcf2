"""The `bulk` job: apply the list a bulk action froze (`streams.memory.bulk`) in batches.

The job applies the list in batches of one scope each (smaller ones after a batch that
took more than `BATCH_SECONDS`). Each batch's writes and the job's
progress (`progress.done`) commit in one transaction, with the progress as it was in the
filter: a run killed halfway resumes at the first batch not committed, and no batch is
applied twice. What a batch starts outside its transaction (removing propagated copies,
pruning search terms) is idempotent. Scopes whose consolidation held the text are flagged
in the same transaction and listed in the progress; once every batch is done, each gets
one rebuild job.

A move keeps the observation's id, provenance, `related_user_ids` and times, so
forget-user and the user audit still reach it; but it is a write into the target: the
target's screen files it (a flagged text in a shared scope waits for review there, an
earlier decision in the source counts for nothing) and a text the target holds already is
not filed twice (the moved one is deleted instead).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import Conflict, NotFound
from streams.guard.screening import screen_one
from streams.jobs import JobRun
from streams.memory.bulk import BulkAction, BulkFilter, BulkMatch
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.rebuild import copies_closure, prune_search_terms, rebuild_due, remove_copies
from streams.records.context_scrub import (
    context_log_forget_observations,
    private_owner,
    removed_texts,
)
from streams.search.dedup import text_key
from streams.search.index import search_index_add, search_index_remove
from streams.store import MemoryStore, StoreSession
from streams.store.bulk import BulkRepository

DEFAULT_BATCH = 200
# A batch is one transaction, and the embedded store ends a transaction after 10 s: a batch
# that took longer than this (a loaded machine: 200 deletes in a scope of 100,000 took
# 10 s under a load average of 16) halves the batches after it, down to `MIN_BATCH`.
BATCH_SECONDS = 3.0
MIN_BATCH = 10
# Observations per search-index removal: its reads match every found document against the
# whole `$in` list on the embedded store (see `streams.store.lookups`). Measured on 1,000
# deletes in a scope of 10,000: the job took 34 s in parts of 200, 15 s of 50, 13 s of 20.
SEARCH_PART = 25


def bulk_payload(
    *,
    bulk_filter: BulkFilter,
    action: BulkAction,
    target: Scope | None,
    match: BulkMatch,
    batch_size: int,
) -> dict[str, Any]:
    """What the job applies: the frozen list, oldest first within each scope, by scope."""
    entries = sorted(match.entries)
    return {
        "filter": bulk_filter.describe(),
        "action": action,
        "target_scope_id": target.id if target is not None else None,
        "matched": match.matched,
        "batch_size": batch_size,
        "entries": [list(e) for e in entries],
    }


def batch_end(entries: list[list[Any]], start: int, batch_size: int) -> int:
    """The end of the batch from `start`: at most `batch_size` entries, all of one scope."""
    end = start
    while end < len(entries) and end - start < batch_size and entries[end][0] == entries[start][0]:
        end += 1
    return end


def bulk_run(*, store: MemoryStore, run: JobRun) -> None:
    """The work of a `bulk` job: the batches not done yet, then one rebuild per scope."""
    job = run.job
    payload = job.payload
    action: BulkAction = payload["action"]
    entries: list[list[Any]] = payload["entries"]
    batch_size = int(payload.get("batch_size") or DEFAULT_BATCH)
    repo = store.bulk
    job_oid = ObjectId(job.id)
    target_id = payload.get("target_scope_id")
    if action == "move":
        target = store.scopes.get(ObjectId(target_id)) if target_id else None
        if target is None:
            raise NotFound("the target scope is gone")
        if not target.is_active:
            raise Conflict("the target scope is paused; resume it and retry the job")
    progress = repo.progress(job_oid)
    resumed_at = int(progress.get("done") or 0)
    start = resumed_at
    while start < len(entries):
        # Each batch starts where the progress stands, so a run resumed with another
        # batch size lines up with what the dead run committed.
        end = batch_end(entries, start, batch_size)
        began = time.monotonic()
        bulk_apply_batch(
            store=store,
            repo=repo,
            job_oid=job_oid,
            action=action,
            entries=entries[start:end],
            done_before=start,
            target_id=target_id,
        )
        if time.monotonic() - began > BATCH_SECONDS:
            batch_size = max(MIN_BATCH, batch_size // 2)
        start = end
    progress = repo.progress(job_oid)
    rebuilds = 0
    for scope_id in sorted(progress.get("scope_ids") or []):
        rebuild = rebuild_due(store=store, scope_id=scope_id, trigger=f"bulk_{action}")
        if rebuild is not None:
            run.follow_ups.append(rebuild)
            rebuilds += 1
    if action == "move" and target_id:
        consolidation = consolidation_due(store=store, scope_id=target_id, trigger="threshold")
        if consolidation is not None:
            run.follow_ups.append(consolidation)
    run.result = {
        "action": action,
        "filter": payload.get("filter", {}),
        "target_scope_id": target_id,
        "matched": len(entries),
        "applied": int(progress.get("applied") or 0),
        "resumed_at": resumed_at,
        "rebuild_scope_ids": sorted(progress.get("scope_ids") or []),
        "rebuilds_queued": rebuilds,
    }


def bulk_apply_batch(
    *,
    store: MemoryStore,
    repo: BulkRepository,
    job_oid: ObjectId,
    action: BulkAction,
    entries: list[list[Any]],
    done_before: int,
    target_id: str | None,
) -> None:
    """One batch (one scope): its writes and the job's progress in one transaction."""
    scope_id = str(entries[0][0])
    scope_oid = ObjectId(scope_id)
    wanted = {str(e[2]) for e in entries}
    found = [
        o
        for o in repo.at_seqs(scope_oid, [int(e[1]) for e in entries])
        if o.id in wanted and not o.deleted
    ]
    if action == "private":
        found = [o for o in found if not o.private]
    # Propagated copies are derived text of what changes: removed (idempotent, so a batch
    # retried after a crash finds nothing left to remove), their scopes flagged.
    copies = copies_closure(store.privacy, [o.id for o in found]) if found else []
    copy_taint: dict[str, list[ObjectId]] = {}
    for copy in copies:
        if copy.consolidated and not copy.deleted:
            copy_taint.setdefault(copy.scope_id, []).append(ObjectId(copy.id))
    remove_copies(store=store, copies=copies)
    ids = [ObjectId(o.id) for o in found]
    now = utcnow()

    def write(session: StoreSession) -> int:
        # What the batch taints, as its transaction reads it: a run may have absorbed one
        # since `found` was read (as a single delete: `observation_delete_write`).
        tainted = repo.absorbed_among(ids, session=session)
        scope = store.scopes.get(scope_oid, session=session)
        pending_before = scope.pending_observation_ids if scope is not None else []
        leaving = {o.id for o in found} if action != "private" else set()
        was_pending = sum(1 for i in pending_before if i in leaving)
        applied = 0
        moved_out = moved_pending = 0
        if action == "delete":
            applied = repo.mark_deleted(scope_oid, ids, now=now, session=session)
            for part in range(0, len(found), SEARCH_PART):
                search_index_remove(
                    store=store, observations=found[part : part + SEARCH_PART], session=session
                )
        elif action == "private":
            applied = repo.mark_private(ids, session=session)
        else:
            assert target_id is not None
            moved_out, moved_pending = _move(store, repo, found, scope_oid, target_id, now, session)
            applied = moved_out
        if scope is not None:
            repo.unlink_from_scope(
                scope_oid,
                pending_after=[ObjectId(i) for i in pending_before if i not in leaving]
                if was_pending
                else None,
                moved_out=moved_out,
                rebuild_after=[
                    ObjectId(i)
                    for i in dict.fromkeys(
                        [*scope.rebuild_observation_ids, *(str(t) for t in tainted)]
                    )
                ]
                if tainted
                else None,
                session=session,
            )
        for other, taint in copy_taint.items():
            repo.flag_rebuild(ObjectId(other), taint, session=session)
        pending_change = -was_pending if action != "private" else 0
        if action == "move":
            pending_change += moved_pending
        if found and pending_change:
            store.agents.adjust_counters(
                found[0].agent_id, now=now, pending=pending_change, session=session
            )
        affected = sorted(({scope_id} if tainted else set()) | set(copy_taint))
        if not repo.advance(
            job_oid,
            expected_done=done_before,
            done=done_before + len(entries),
            applied=applied,
            scope_ids=affected,
            session=session,
        ):
            raise Conflict("another run applied this batch")
        return applied

    store.in_transaction(write, attempts=5)
    if action != "private" and found:
        prune_search_terms(store=store, scope_id=scope_id, texts=[o.content for o in found])
    # Removed text leaves the context log (idempotent: a retried batch finds none left).
    context_log_forget_observations(store=store, texts=removed_texts(copies))
    if action != "move" and found:
        owner = private_owner(store, scope_id) if action == "private" else None
        context_log_forget_observations(
            store=store, texts=removed_texts(found), except_user_id=owner
        )


def _move(
    store: MemoryStore,
    repo: BulkRepository,
    found: list[Observation],
    source_oid: ObjectId,
    target_id: str,
    now: datetime,
    session: StoreSession,
) -> tuple[int, int]:
    """Inside the batch's transaction: claim places in the target's log (version in the
    filter: a concurrent add makes it a conflict and the transaction is retried), re-file
    the observations there, and move their search postings with them.

    A move is a write into the target: each observation passes the screen for it
    (`screen_one`), so what the target's rules hold (a flagged text in a shared scope)
    waits for review there, out of its pending list and its search index. Dedup applies
    too: one whose text the target holds live (or an earlier one of the batch) is not
    filed twice; it is deleted from the source instead (the target keeps its own).
    Returns how many left the source, and how many of them are pending in the target."""
    if not found:
        return 0, 0
    target_oid = ObjectId(target_id)
    target = store.scopes.get(target_oid, session=session)
    if target is None:
        raise NotFound("the target scope is gone")
    refiled = [_screened_into(store, target, o, now) for o in found]
    held = store.observations.live_by_text_key(
        [o.text_key for o in refiled if o.text_key], session=session
    )
    taken: set[str | None] = set(held)
    movers: list[Observation] = []
    merged: list[Observation] = []
    for o in refiled:
        (merged if o.text_key in taken else movers).append(o)
        taken.add(o.text_key)
    if movers and not store.scopes.reserve_observation_seqs(
        target_oid,
        expected_seq=target.observation_seq,
        count=len(movers),
        pending_ids=[ObjectId(o.id) for o in movers if not o.held],
        now=now,
        session=session,
    ):
        raise Conflict("the target scope's log moved on; retry")
    placements = [
        (ObjectId(o.id), target.observation_seq + offset) for offset, o in enumerate(movers, 1)
    ]
    moved = repo.move(
        placements, screened=movers, source_id=source_oid, target_id=target_oid, session=session
    )
    if moved != len(movers):
        raise Conflict("an observation left its scope meanwhile; retry")
    for o in merged:
        store.observations.mark_deleted(
            ObjectId(o.id), scope_id=source_oid, now=now, session=session
        )
    for part in range(0, len(found), SEARCH_PART):
        search_index_remove(
            store=store, observations=found[part : part + SEARCH_PART], session=session
        )
    search_index_add(store=store, observations=[o for o in movers if not o.held], session=session)
    return len(found), sum(1 for o in movers if not o.held)


def _screened_into(
    store: MemoryStore, target: Scope, observation: Observation, now: datetime
) -> Observation:
    """The observation as the target's screen files it: its earlier review left behind
    (a decision in the source is no decision for the target)."""
    moved = replace(
        observation,
        scope_id=target.id,
        review_status=None,
        review=None,
        consolidated=False,
        restored_to_pending=False,
    )
    screen_one(
        scope=target,
        observation=moved,
        origin="move",
        now=now,
        instruction_policy=store.instruction_policy,
    )
    moved.text_key = text_key(target.id, moved.content)
    return moved
