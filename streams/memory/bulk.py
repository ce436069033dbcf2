"""Bulk actions by filter: delete, mark private, or move to another scope of the same agent.

A filter names observations of one agent by scope, session, speaker, text, dates and
status (at least one of them). `bulk_match` finds them through declared indexes (see
`streams.store.bulk`) and stops at one more than the limit (`MEMORY_BULK_MAX`): a dry run
answers the count and a sample, a real run freezes the matched list into a `bulk` job.

The job applies the list in batches of one scope each (smaller ones after a batch that
took more than `BATCH_SECONDS`). Each batch's writes and the job's
progress (`progress.done`) commit in one transaction, with the progress as it was in the
filter: a run killed halfway resumes at the first batch not committed, and no batch is
applied twice. What a batch starts outside its transaction (removing propagated copies,
pruning search terms) is idempotent. Scopes whose consolidation held the text are flagged
in the same transaction and listed in the progress; once every batch is done, each gets
one rebuild job.

A move keeps the observation whole (id, provenance, `related_user_ids`, times): it only
changes scope, takes a place in the target's log and is pending there, so forget-user and
the user audit still reach it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import parse_object_id
from streams.jobs import JobRun
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.rebuild import copies_closure, prune_search_terms, rebuild_due, remove_copies
from streams.records.context_scrub import (
    context_log_forget_observations,
    private_owner,
    removed_texts,
)
from streams.search.index import search_index_add, search_index_remove
from streams.store import MemoryStore, StoreSession
from streams.store.bulk import BulkRepository
from streams.store.privacy import PrivacyRepository

BulkAction = Literal["delete", "private", "move"]
BULK_ACTIONS: tuple[BulkAction, ...] = ("delete", "private", "move")
BulkStatus = Literal["pending", "consolidated", "all"]
DEFAULT_MAX = 10_000
DEFAULT_BATCH = 200
# A batch is one transaction, and the embedded store ends a transaction after 10 s: a batch
# that took longer than this (a loaded machine: 200 deletes in a scope of 100,000 took
# 10 s under a load average of 16) halves the batches after it, down to `MIN_BATCH`.
BATCH_SECONDS = 3.0
MIN_BATCH = 10
SAMPLE = 20
SCOPE_WINDOW = 5_000  # `seq` places read per query when walking a scope's log
AGENT_SCOPE_PAGE = 100
# Observations per search-index removal: its reads match every found document against the
# whole `$in` list on the embedded store (see `streams.store.lookups`). Measured on 1,000
# deletes in a scope of 10,000: the job took 34 s in parts of 200, 15 s of 50, 13 s of 20.
SEARCH_PART = 25
MAX_EXTERNAL_ID = 128
MAX_QUERY_CHARS = 200
FILTER_FIELDS = (
    "scope_id",
    "session_id",
    "speaker_user_id",
    "q",
    "observed_after",
    "observed_before",
    "status",
)


@dataclass(frozen=True)
class BulkFilter:
    """Which observations of an agent a bulk action takes (deleted ones never)."""

    scope_id: str | None = None
    session_id: str | None = None
    speaker_user_id: str | None = None
    q: str | None = None
    observed_after: datetime | None = None
    observed_before: datetime | None = None
    status: BulkStatus | None = None

    def is_empty(self) -> bool:
        return all(
            value is None or value == ""
            for value in (
                self.scope_id,
                self.session_id,
                self.speaker_user_id,
                self.q,
                self.observed_after,
                self.observed_before,
            )
        ) and self.status in (None, "all")

    def describe(self) -> dict[str, Any]:
        """The filter as the audit entry and the job keep it (set fields only)."""
        out: dict[str, Any] = {}
        for name in FILTER_FIELDS:
            value = getattr(self, name)
            if value is None or value == "":
                continue
            out[name] = value.isoformat() if isinstance(value, datetime) else value
        return out

    def check(self) -> None:
        """Every field as any other write checks it; at least one field narrows."""
        if self.is_empty():
            raise InvalidInput(
                "the filter needs at least one field: scope_id, session_id, speaker_user_id, "
                "q, observed_after, observed_before or status",
                details=[{"field": "filter"}],
            )
        if self.scope_id is not None and parse_object_id(self.scope_id) is None:
            raise NotFound("scope not found")
        for name in ("session_id", "speaker_user_id"):
            value = getattr(self, name)
            if value is not None and not (1 <= len(value) <= MAX_EXTERNAL_ID):
                raise InvalidInput(
                    f"{name} must be 1..{MAX_EXTERNAL_ID} chars", details=[{"field": name}]
                )
        if self.q is not None and not (1 <= len(self.q.strip()) <= MAX_QUERY_CHARS):
            raise InvalidInput(f"q must be 1..{MAX_QUERY_CHARS} chars", details=[{"field": "q"}])
        for name in ("observed_after", "observed_before"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise InvalidInput(f"{name} needs a timezone", details=[{"field": name}])
            if value is not None and not _storable(value):
                raise InvalidInput(f"{name} is out of range", details=[{"field": name}])
        if (
            self.observed_after is not None
            and self.observed_before is not None
            and self.observed_after >= self.observed_before
        ):
            raise InvalidInput(
                "observed_after must be before observed_before",
                details=[{"field": "observed_after"}],
            )
        if self.status is not None and self.status not in ("pending", "consolidated", "all"):
            raise InvalidInput(
                "status must be pending, consolidated or all", details=[{"field": "status"}]
            )

    def extra(self) -> dict[str, Any]:
        """The fields that ride inside the query of whichever index leads."""
        query: dict[str, Any] = {"deleted_at": None}
        if self.session_id:
            query["source_session_id"] = self.session_id
        if self.speaker_user_id:
            query["related_user_ids"] = self.speaker_user_id
        if self.q:
            query["content"] = re.compile(re.escape(self.q.strip()), re.IGNORECASE)
        window: dict[str, datetime] = {}
        if self.observed_after is not None:
            window["$gte"] = self.observed_after
        if self.observed_before is not None:
            window["$lt"] = self.observed_before
        if window:
            query["observed_at"] = window
        if self.status in ("pending", "consolidated"):
            query["consolidated"] = self.status == "consolidated"
        return query


def _storable(value: datetime) -> bool:
    """A time the store can hold: in UTC within years 1..9999 (0001-01-01T00:00+05:00 is not)."""
    try:
        value.astimezone(UTC)
    except OverflowError:
        return False
    return True


@dataclass
class BulkMatch:
    """What a filter matched: `(scope_id, seq, observation_id)` newest first, and a sample."""

    entries: list[tuple[str, int, str]] = field(default_factory=list)
    sample: list[Observation] = field(default_factory=list)

    @property
    def matched(self) -> int:
        return len(self.entries)


def bulk_target(
    *,
    store: MemoryStore,
    agent_id: str,
    action: BulkAction,
    target_scope_id: str | None,
    visible_agents: frozenset[str] | None = None,
) -> Scope | None:
    """The scope a move files into: of the same agent (else 422), active (a paused scope
    takes no writes: 422); unknown, or of an agent the caller may not see: 404. Only a move
    takes one."""
    if action not in BULK_ACTIONS:
        raise InvalidInput("action must be delete, private or move", details=[{"field": "action"}])
    if action != "move":
        if target_scope_id is not None:
            raise InvalidInput(
                "target_scope_id is for a move only", details=[{"field": "target_scope_id"}]
            )
        return None
    if not target_scope_id:
        raise InvalidInput("a move needs target_scope_id", details=[{"field": "target_scope_id"}])
    oid = parse_object_id(target_scope_id)
    target = store.scopes.get(oid) if oid is not None else None
    if target is None or (visible_agents is not None and target.agent_id not in visible_agents):
        raise NotFound("target scope not found")
    if target.agent_id != agent_id:
        raise InvalidInput(
            "a move stays within the agent: the target scope belongs to another agent",
            details=[{"field": "target_scope_id"}],
        )
    if not target.is_active:
        raise InvalidInput(
            "the target scope is paused; resume it first", details=[{"field": "target_scope_id"}]
        )
    return target


def bulk_match(
    *,
    store: MemoryStore,
    agent_id: str,
    bulk_filter: BulkFilter,
    action: BulkAction = "delete",
    target: Scope | None = None,
    max_matched: int = DEFAULT_MAX,
) -> BulkMatch:
    """The observations the filter takes for this action (those it would change: a move
    leaves out what is in the target already, mark-private what is private already).

    InvalidInput when more than `max_matched` match; NotFound for a scope of another agent.
    """
    bulk_filter.check()
    repo = BulkRepository(store.db)
    extra = bulk_filter.extra()
    if action == "private":
        extra["private"] = False
    limit = max_matched + 1
    docs: list[dict[str, Any]] = []
    scope: Scope | None = None
    if bulk_filter.scope_id:
        scope = store.scopes.get(ObjectId(bulk_filter.scope_id))
        if scope is None or scope.agent_id != agent_id:
            raise NotFound("scope not found")
    if bulk_filter.session_id or bulk_filter.speaker_user_id:
        # A session or a person holds far fewer observations than a scope can: their index
        # leads, and the scope rides in the query (a scope of 100,000 walked whole took 65 s
        # on the embedded store to find one session's 10,000).
        key, value = (
            ("source_session_id", bulk_filter.session_id)
            if bulk_filter.session_id
            else ("related_user_ids", bulk_filter.speaker_user_id)
        )
        assert value is not None
        if bulk_filter.scope_id:
            extra["scope_id"] = ObjectId(bulk_filter.scope_id)
        docs = repo.agent_matches(agent_id, key=key, value=value, extra=extra, limit=limit)
    elif scope is not None:
        docs = _walk_scope(repo, scope, extra, limit)
    else:
        docs = _walk_agent(store, repo, agent_id, extra, limit)
    if target is not None:
        docs = [d for d in docs if str(d["scope_id"]) != target.id]
    if len(docs) > max_matched:
        raise InvalidInput(
            f"more than {max_matched} observations match; narrow the filter",
            details=[{"field": "filter", "max": max_matched}],
        )
    entries = [(str(d["scope_id"]), int(d["seq"]), str(d["_id"])) for d in docs]
    sample = store.observations.get_many([ObjectId(i) for _, _, i in entries[:SAMPLE]])
    return BulkMatch(entries=entries, sample=sample)


def _walk_scope(
    repo: BulkRepository, scope: Scope, extra: dict[str, Any], limit: int
) -> list[dict[str, Any]]:
    """The scope's log from the newest place down, one closed `seq` window at a time."""
    found: list[dict[str, Any]] = []
    oid = ObjectId(scope.id)
    high = scope.observation_seq
    while high > 0 and len(found) < limit:
        low = max(high - SCOPE_WINDOW, 0)
        found += repo.scope_window(oid, low_seq=low, high_seq=high, extra=extra)
        high = low
    return found[:limit]


def _walk_agent(
    store: MemoryStore, repo: BulkRepository, agent_id: str, extra: dict[str, Any], limit: int
) -> list[dict[str, Any]]:
    """No scope, session or speaker named: every scope of the agent, newest first."""
    found: list[dict[str, Any]] = []
    agent = store.agents.get(agent_id)
    top = agent.scope_seq if agent is not None else 0
    before: int | None = None
    while len(found) < limit:
        scopes, before = store.scopes.page(
            agent_id=agent_id, top_seq=top, before=before, limit=AGENT_SCOPE_PAGE
        )
        for scope in scopes:
            found += _walk_scope(repo, scope, extra, limit - len(found))
            if len(found) >= limit:
                break
        if before is None:
            break
    return found[:limit]


# -- the job -------------------------------------------------------------------------------


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
    repo = BulkRepository(store.db)
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
    copies = copies_closure(PrivacyRepository(store.db), [o.id for o in found]) if found else []
    copy_taint: dict[str, list[ObjectId]] = {}
    for copy in copies:
        if copy.consolidated and not copy.deleted:
            copy_taint.setdefault(copy.scope_id, []).append(ObjectId(copy.id))
    remove_copies(store=store, copies=copies)
    tainted = [ObjectId(o.id) for o in found if o.consolidated or o.restored_to_pending]
    ids = [ObjectId(o.id) for o in found]
    now = utcnow()

    def write(session: StoreSession) -> int:
        scope = store.scopes.get(scope_oid, session=session)
        pending_before = scope.pending_observation_ids if scope is not None else []
        leaving = {o.id for o in found} if action != "private" else set()
        was_pending = sum(1 for i in pending_before if i in leaving)
        applied = 0
        moved_out = 0
        if action == "delete":
            applied = repo.mark_deleted(ids, now=now, session=session)
            for part in range(0, len(found), SEARCH_PART):
                search_index_remove(
                    store=store, observations=found[part : part + SEARCH_PART], session=session
                )
        elif action == "private":
            applied = repo.mark_private(ids, session=session)
        else:
            assert target_id is not None
            applied = moved_out = _move(store, repo, found, scope_oid, target_id, now, session)
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
            pending_change += moved_out
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
) -> int:
    """Inside the batch's transaction: claim places in the target's log (version in the
    filter: a concurrent add makes it a conflict and the transaction is retried), re-file
    the observations there, and move their search postings with them."""
    if not found:
        return 0
    target_oid = ObjectId(target_id)
    target = store.scopes.get(target_oid, session=session)
    if target is None:
        raise NotFound("the target scope is gone")
    if not store.scopes.reserve_observation_seqs(
        target_oid,
        expected_seq=target.observation_seq,
        count=len(found),
        pending_ids=[ObjectId(o.id) for o in found],
        now=now,
        session=session,
    ):
        raise Conflict("the target scope's log moved on; retry")
    placements = [
        (ObjectId(o.id), target.observation_seq + offset) for offset, o in enumerate(found, 1)
    ]
    moved = repo.move(placements, source_id=source_oid, target_id=target_oid, session=session)
    if moved != len(found):
        raise Conflict("an observation left its scope meanwhile; retry")
    for part in range(0, len(found), SEARCH_PART):
        search_index_remove(
            store=store, observations=found[part : part + SEARCH_PART], session=session
        )
    refiled = [_refiled(o, target_id) for o in found]
    search_index_add(store=store, observations=refiled, session=session)
    return moved


def _refiled(observation: Observation, target_id: str) -> Observation:
    return replace(observation, scope_id=target_id)
