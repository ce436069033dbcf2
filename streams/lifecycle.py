"""Memory lifecycle: expiry of observations and the sweep that handles it.

An observation with `expires_at` is live until then; from that moment every reader
(context, search, consolidation, propagation) leaves it out: a query-time check, so it
is gone "at once" without waiting for any job. The periodic sweep then, per expired
observation, once:

1. does what a delete does to derived memory (`streams.rebuild.sources_changed`: its
   propagated copies removed, each consolidation that absorbed it flagged and rebuilt);
2. claims it (`expiry_due` unset, in one transaction with taking it out of search and
   of the pending list, and its audit entry): a second sweep, or one resumed after a
   crash, finds it handled and does nothing to it again;

and purges the handled ones for good `MEMORY_EXPIRED_KEEP_DAYS` after they expired.
A sweep killed between step 1 and 2 repeats step 1 next time; that step is idempotent
(copies already gone, the scope's flag a set, at most one queued rebuild per scope).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bson import ObjectId

from streams.audit import audit_record, content_digest
from streams.documents import Job, Observation, utcnow
from streams.exceptions import Conflict, InvalidInput
from streams.rebuild import prune_search_terms, sources_changed
from streams.search import search_index_remove
from streams.store import MemoryStore, StoreSession
from streams.store.privacy import PrivacyRepository

SWEEP_ACTOR = "system:lifecycle"
SWEEP_BATCH = 200
MAX_SWEEP_BATCHES = 50  # per pass: a backlog is worked through over several passes


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
    keep_days: int,
    now: datetime | None = None,
    batch: int = SWEEP_BATCH,
) -> SweepResult:
    """One pass: handle what expired by `now`, purge what expired `keep_days` before."""
    now = now or utcnow()
    result = SweepResult()
    for _ in range(MAX_SWEEP_BATCHES):
        due = store.observations.expiry_due(now, limit=batch)
        if not due:
            break
        for observation in due:
            if _expire(store=store, observation=observation, now=now, jobs=result.follow_ups):
                result.expired += 1
    cutoff = now - timedelta(days=keep_days)
    for _ in range(MAX_SWEEP_BATCHES):
        found = store.observations.expired_before(cutoff, limit=batch)
        handled = [o for o in found if o.expiry_swept]
        if not handled:
            break
        result.purged += observations_purge(
            store=store, observations=handled, now=now, reason="expired"
        )
    return result


def _expire(
    *, store: MemoryStore, observation: Observation, now: datetime, jobs: list[Job]
) -> bool:
    oid = ObjectId(observation.id)
    scope_oid = ObjectId(observation.scope_id)
    if not observation.deleted:
        # As a delete: copies out, consolidations that absorbed it flagged and rebuilt.
        sources_changed(store=store, observation=observation, change="delete", follow_ups=jobs)
    was_pending = False

    def claim(session: StoreSession) -> bool:
        nonlocal was_pending
        if not store.observations.expiry_claim(oid, session=session):
            return False  # another pass handled it
        if not observation.deleted:  # a deleted one left search and pending already
            search_index_remove(store=store, observations=[observation], session=session)
            was_pending = store.scopes.pull_pending(scope_oid, [oid], session=session) > 0
        audit_record(
            store=store,
            actor=SWEEP_ACTOR,
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
    *, store: MemoryStore, observations: list[Observation], now: datetime, reason: str
) -> int:
    """Remove observations for good, per scope in one transaction (with their text
    history and an audit entry); the ones still in search (retention: consolidated, live)
    are taken out of it in the same transaction. Returns how many were removed."""
    by_scope: dict[str, list[Observation]] = {}
    for observation in observations:
        by_scope.setdefault(observation.scope_id, []).append(observation)
    return sum(
        _purge_scope(store=store, scope_id=scope_id, group=group, now=now, reason=reason)
        for scope_id, group in sorted(by_scope.items())
    )


def _purge_scope(
    *, store: MemoryStore, scope_id: str, group: list[Observation], now: datetime, reason: str
) -> int:
    repo = PrivacyRepository(store.db)
    ids = [ObjectId(o.id) for o in group]
    live = [o for o in group if not o.deleted and not o.expiry_swept]

    def purge(session: StoreSession) -> int:
        store.text_history.purge(ids, session=session)
        deleted = repo.delete_observations(ids, session=session)
        if live:
            if deleted != len(ids):  # a concurrent pass took some: leave them to it
                raise Conflict("observations purged concurrently")
            search_index_remove(store=store, observations=live, session=session)
        audit_record(
            store=store,
            actor=SWEEP_ACTOR,
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
