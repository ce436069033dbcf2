"""Memory lifecycle: expiry of observations, retention caps, and the sweep that does both.

An observation with `expires_at` is live until then; from that moment every reader
(context, search, consolidation, propagation) leaves it out: a query-time check, so it
is gone "at once" without waiting for any job. The periodic sweep then, per expired
observation, once:

1. does what a delete does to derived memory (`streams.memory.rebuild.sources_changed`: its
   propagated copies removed, each consolidation that absorbed it flagged and rebuilt);
2. claims it (`expiry_due` unset, in one transaction with taking it out of search and
   of the pending list, and its audit entry): a second sweep, or one resumed after a
   crash, finds it handled and does nothing to it again;

and purges the handled ones for good `MEMORY_EXPIRED_KEEP_DAYS` after they expired.
A sweep killed between step 1 and 2 repeats step 1 next time; that step is idempotent
(copies already gone, the scope's flag a set, at most one queued rebuild per scope).

Retention: a scope's `max_observations` (None: off) caps its log. Beyond it, the oldest
consolidated observations are removed for good (records only: the consolidation keeps
what it absorbed and is never rebuilt for it, domain.md). Pending observations, pinned
ones (a pin quotes their text), ones waiting for review and ones with a rebuild pending
are never removed. The pass holds the scope's consolidation lease, so it never runs
while a consolidation (or rebuild) run holds it, and none starts while it purges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bson import ObjectId

from streams.core.documents import Job, Observation, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput
from streams.memory.pins import pin_quotes
from streams.memory.rebuild import LEASE, prune_search_terms
from streams.memory.source_change import sources_changed
from streams.records.audit import AuditSink, content_digest
from streams.search.index import search_index_remove
from streams.store import MemoryStore, StoreSession

SWEEP_ACTOR = "system:lifecycle"
SWEEP_BATCH = 200
MAX_SWEEP_BATCHES = 50  # per pass: a backlog is worked through over several passes
RETENTION_WINDOW = 500  # of a scope's log, read oldest first
RETENTION_WINDOWS = 40  # per scope and pass (20,000 observations)
RETENTION_SCOPES = 100  # scopes with a cap read per page


def expires_at_check(expires_at: datetime | None, *, now: datetime, field_name: str) -> None:
    """An expiry given on create must lie ahead (422 otherwise)."""
    if expires_at is not None and expires_at <= now:
        raise InvalidInput("expires_at must be in the future", details=[{"field": field_name}])


@dataclass
class SweepResult:
    expired: int = 0  # observations handled this pass (rebuilds queued, out of search)
    purged: int = 0  # removed for good (expired more than the keep days ago)
    follow_ups: list[Job] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"expired": self.expired, "purged": self.purged, "rebuilds": len(self.follow_ups)}


def expiry_sweep(
    *,
    store: MemoryStore,
    audit: AuditSink,
    keep_days: int,
    now: datetime | None = None,
    batch: int = SWEEP_BATCH,
) -> SweepResult:
    """One pass: handle what expired by `now`, purge what expired `keep_days` before.
    Each claim's and purge's entry goes to `audit` (the sweep action's sink,
    `streams.actions.sweeps`), in that claim's or purge's transaction."""
    now = now or utcnow()
    result = SweepResult()
    for _ in range(MAX_SWEEP_BATCHES):
        due = store.observations.expiry_due(now, limit=batch)
        if not due:
            break
        for observation in due:
            if _expire(
                store=store, audit=audit, observation=observation, now=now, jobs=result.follow_ups
            ):
                result.expired += 1
    cutoff = now - timedelta(days=keep_days)
    for _ in range(MAX_SWEEP_BATCHES):
        found = store.observations.expired_before(cutoff, limit=batch)
        handled = [o for o in found if o.expiry_swept]
        if not handled:
            break
        result.purged += observations_purge(
            store=store, audit=audit, observations=handled, now=now, reason="expired"
        )
    return result


def _expire(
    *,
    store: MemoryStore,
    audit: AuditSink,
    observation: Observation,
    now: datetime,
    jobs: list[Job],
) -> bool:
    oid = ObjectId(observation.id)
    scope_oid = ObjectId(observation.scope_id)
    if not observation.deleted:
        # As a delete: copies out, consolidations that absorbed it flagged and rebuilt.
        sources_changed(
            store=store,
            observation=observation,
            change="delete",
            follow_ups=jobs,
            scrub_log=False,
        )
    was_pending = False

    def claim(session: StoreSession) -> bool:
        nonlocal was_pending
        if not store.observations.expiry_claim(oid, session=session):
            return False  # another pass handled it
        if not observation.deleted:  # a deleted one left search and pending already
            search_index_remove(store=store, observations=[observation], session=session)
            was_pending = store.scopes.pull_pending(scope_oid, [oid], session=session) > 0
        audit(
            action="observation.expire",
            object_type="observation",
            object_id=observation.id,
            agent_id=observation.agent_id,
            summary={
                "scope_id": observation.scope_id,
                "content": content_digest(observation.content),
                "expires_at": observation.expires_at.isoformat()
                if observation.expires_at
                else None,
            },
            at=now,
            session=session,
        )
        return True

    claimed = store.in_transaction(claim)
    if claimed:
        if was_pending:
            store.agents.adjust_counters(observation.agent_id, now=now, pending=-1)
        if not observation.deleted:
            prune_search_terms(
                store=store, scope_id=observation.scope_id, texts=[observation.content]
            )
    return bool(claimed)


def observations_purge(
    *,
    store: MemoryStore,
    audit: AuditSink,
    observations: list[Observation],
    now: datetime,
    reason: str,
) -> int:
    """Remove observations for good, per scope in one transaction (with their text
    history and an audit entry); the ones still in search (retention: consolidated, live)
    are taken out of it in the same transaction. Returns how many were removed."""
    by_scope: dict[str, list[Observation]] = {}
    for observation in observations:
        by_scope.setdefault(observation.scope_id, []).append(observation)
    return sum(
        _purge_scope(
            store=store, audit=audit, scope_id=scope_id, group=group, now=now, reason=reason
        )
        for scope_id, group in sorted(by_scope.items())
    )


def _purge_scope(
    *,
    store: MemoryStore,
    audit: AuditSink,
    scope_id: str,
    group: list[Observation],
    now: datetime,
    reason: str,
) -> int:
    repo = store.privacy
    ids = [ObjectId(o.id) for o in group]
    live = [o for o in group if not o.deleted and not o.expiry_swept]

    def purge(session: StoreSession) -> int:
        store.text_history.purge(ids, session=session)
        deleted = repo.delete_observations(ObjectId(scope_id), ids, session=session)
        if live:
            if deleted != len(ids):  # a concurrent pass took some: leave them to it
                raise Conflict("observations purged concurrently")
            search_index_remove(store=store, observations=live, session=session)
        audit(
            action=f"scope.purge_{reason}",
            object_type="scope",
            object_id=scope_id,
            agent_id=group[0].agent_id,
            summary={
                "reason": reason,
                "purged": deleted,
                "observation_ids": sorted(map(str, ids)),
            },
            at=now,
            session=session,
        )
        return deleted

    try:
        count = store.in_transaction(purge)
    except Conflict:
        return 0
    if count:
        repo.unlink_observations(ObjectId(scope_id), ids, count=count)
        pending = sum(1 for o in live if not o.consolidated)
        store.agents.adjust_counters(
            group[0].agent_id, now=now, observations=-count, pending=-pending
        )
    if live:
        prune_search_terms(store=store, scope_id=scope_id, texts=[o.content for o in live])
    return count


# -- retention ------------------------------------------------------------------------------


@dataclass
class RetentionResult:
    purged: int = 0
    note: str | None = None


def retention_apply(
    *, store: MemoryStore, audit: AuditSink, scope: Scope, now: datetime | None = None
) -> RetentionResult:
    """Bring one scope back under its `max_observations`, under its consolidation lease."""
    now = now or utcnow()
    if not scope.max_observations or scope.observation_count <= scope.max_observations:
        return RetentionResult(note="within the cap")
    oid = ObjectId(scope.id)
    owner = f"retention:{ObjectId()}"
    if not store.scopes.acquire_lease(oid, owner=owner, now=now, until=now + LEASE):
        return RetentionResult(note="a consolidation run holds the scope; next pass")
    try:
        fresh = store.scopes.get(oid)
        if fresh is None or not fresh.max_observations:
            return RetentionResult(note="no cap")
        excess = fresh.observation_count - fresh.max_observations
        chosen = _oldest_purgeable(store=store, scope=fresh, wanted=excess, now=now)
        purged = observations_purge(
            store=store, audit=audit, observations=chosen, now=now, reason="retention"
        )
        if purged:
            store.scopes.count_retention_purge(oid, purged, now=now)
        return RetentionResult(purged=purged)
    finally:
        store.scopes.release_lease(oid, owner=owner)


def _oldest_purgeable(
    *, store: MemoryStore, scope: Scope, wanted: int, now: datetime
) -> list[Observation]:
    if wanted <= 0:
        return []
    oid = ObjectId(scope.id)
    keep = set(scope.pending_observation_ids) | set(scope.rebuild_observation_ids)
    chosen: list[Observation] = []
    low = 0
    for _ in range(RETENTION_WINDOWS):
        if low >= scope.observation_seq:
            break
        high = min(low + RETENTION_WINDOW, scope.observation_seq)
        for observation in store.observations.seq_window(oid, low_seq=low, high_seq=high):
            if _purgeable(observation, scope=scope, keep=keep, now=now):
                chosen.append(observation)
                if len(chosen) == wanted:
                    return chosen
        low = high
    return chosen


def _purgeable(observation: Observation, *, scope: Scope, keep: set[str], now: datetime) -> bool:
    """Consolidated (so neither pending nor waiting for review), live, not pinned."""
    return (
        observation.status == "consolidated"
        and not observation.deleted
        and not observation.is_expired(now)  # the expiry sweep's
        and observation.id not in keep
        and not any(pin_quotes(pin, observation.content) for pin in scope.pins)
    )


def retention_sweep(*, store: MemoryStore, audit: AuditSink, now: datetime | None = None) -> int:
    """One pass over the scopes with a cap; how many observations it purged."""
    now = now or utcnow()
    purged = 0
    after: ObjectId | None = None
    while True:
        scopes = store.scopes.with_retention(after=after, limit=RETENTION_SCOPES)
        if not scopes:
            return purged
        for scope in scopes:
            purged += retention_apply(store=store, audit=audit, scope=scope, now=now).purged
        after = ObjectId(scopes[-1].id)
