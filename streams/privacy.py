"""Forget user: remove everything an agent remembers about one user, and prove it.

Forgetting removes, for one user of one agent: the individual scope with its
observations and consolidation history, the user's buffered messages and
session buffers, every observation elsewhere whose `related_user_ids` holds the
user, and the propagated copies of any of these.

Group and collective consolidations that absorbed such observations hold the
user's content in their text and in every history version from the first one
that absorbed it (each version is written from the one before). So each such
scope is rebuilt: the last version from before the user's content, plus the
observations the later versions absorbed minus the user's, go through one
consolidation LLM call into a new version (trigger `forget_user`), and the
texts of the tainted versions are replaced by a redaction marker (version
numbers, times and who made them stay, for the audit). Hand edits made after
the user's content arrived are lost with the versions: they may quote it.

Order matters for a retried job: a scope is rebuilt and redacted before any
observation is deleted, so a run that fails half way still finds what is left
to do on the next attempt.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bson import ObjectId

from streams.consolidation import consolidation_commit
from streams.consolidation_runs import consolidation_fold
from streams.documents import Job, Observation, Scope, utcnow
from streams.exceptions import Conflict
from streams.jobs import JobRun, job_create
from streams.search import search_index_forget
from streams.search_text import term_counts
from streams.store import MemoryStore
from streams.store.privacy import BATCH, PrivacyRepository
from streams.user_audit import check_user_ids, user_individual_scope

REDACTED = "[redacted: this version held content of a user who was forgotten]"
HISTORY_CHUNK = 200
COPY_CHUNK = 200
MAX_COPIES_PER_SOURCE = 20
LEASE = timedelta(minutes=5)


def _repo(store: MemoryStore) -> PrivacyRepository:
    return PrivacyRepository(store.db)


# -- forget user ------------------------------------------------------------------------


def forget_user_request(*, store: MemoryStore, agent_id: str, user_id: str, actor: str) -> Job:
    """Queue the forgetting of one user of one agent (a `forget_user` job).

    Forgetting someone with nothing remembered is not an error: the receipt says zero,
    which is the proof the caller wants.
    """
    check_user_ids(agent_id, user_id)
    return job_create(
        store=store,
        kind="forget_user",
        agent_id=agent_id,
        trigger="request",
        actor=actor,
        payload={"user_id": user_id},
    )


def forget_user_run(*, store: MemoryStore, run: JobRun, lease: timedelta = LEASE) -> None:
    """The work of a forget_user job; its result is the deletion receipt."""
    job = run.job
    user_id = str(job.payload["user_id"])
    agent_id = job.agent_id
    repo = _repo(store)
    individual = user_individual_scope(store=store, agent_id=agent_id, user_id=user_id)
    elsewhere, own = _observations_of(repo, agent_id, user_id, individual)
    by_scope: dict[str, list[Observation]] = {}
    for observation in elsewhere:
        by_scope.setdefault(observation.scope_id, []).append(observation)
    rebuilt: list[dict[str, Any]] = []
    redacted = 0
    for scope_id, observations in sorted(by_scope.items()):
        outcome = _rebuild_without(store, run, scope_id, observations, lease=lease)
        if outcome is not None:
            rebuilt.append(outcome)
            redacted += outcome.pop("redacted")
    deleted = {
        "memory_scopes": 0,
        "memory_observations": 0,
        "memory_consolidations": 0,
        "memory_messages": 0,
        "memory_session_buffers": 0,
    }
    now = utcnow()
    for scope_id, observations in sorted(by_scope.items()):
        _forget_in_search(store, repo, scope_id, observations)
        count = repo.delete_observations([ObjectId(o.id) for o in observations])
        if count:
            repo.unlink_observations(
                ObjectId(scope_id), [ObjectId(o.id) for o in observations], count=count
            )
        deleted["memory_observations"] += count
    store.agents.adjust_counters(agent_id, now=now, observations=-deleted["memory_observations"])
    if individual is not None:
        # Term by term rather than `search_index_drop_scope`: its `_id` range delete
        # scans the whole index on the embedded store (3 s at 10,000 observations).
        _forget_in_search(store, repo, individual.id, own)
        repo.drop_search_totals(ObjectId(individual.id))
        removed = repo.delete_scope(ObjectId(individual.id))
        for collection, count in removed.items():
            deleted[collection] += count
        if removed["memory_scopes"]:
            store.agents.adjust_counters(
                agent_id,
                now=now,
                scopes=-1,
                observations=-removed["memory_observations"],
                pending=-individual.pending_count,
            )
    for collection, count in repo.delete_user_messages(agent_id, user_id).items():
        deleted[collection] += count
    run.result = {
        "agent_id": agent_id,
        "user_id": user_id,
        "actor": job.actor,
        "finished_at": utcnow().isoformat(),
        "deleted": deleted,
        "redacted_versions": redacted,
        "reconsolidated_scopes": rebuilt,
    }


def _forget_in_search(
    store: MemoryStore, repo: PrivacyRepository, scope_id: str, observations: list[Observation]
) -> None:
    """Out of the search index, with the terms no other observation of the scope holds."""
    search_index_forget(store=store, observations=observations)
    terms = sorted({t for o in observations for t in term_counts(o.content)})
    repo.prune_search_terms(ObjectId(scope_id), terms)


def _observations_of(
    repo: PrivacyRepository, agent_id: str, user_id: str, individual: Scope | None
) -> tuple[list[Observation], list[Observation]]:
    """(elsewhere, own): observations outside the individual scope to remove (those naming
    the user, and the propagated copies, and copies of copies, of these and of the
    individual ones), and the individual scope's own."""
    found: dict[str, Observation] = {}
    after: ObjectId | None = None
    while True:
        batch = repo.related_observations(agent_id, user_id, after=after)
        found.update((o.id, o) for o in batch)
        if len(batch) < BATCH:
            break
        after = ObjectId(batch[-1].id)
    own: list[Observation] = []
    if individual is not None:
        oid = ObjectId(individual.id)
        for low in range(0, individual.observation_seq, BATCH):
            high = min(low + BATCH, individual.observation_seq)
            own += repo.scope_observations(oid, low_seq=low, high_seq=high)
    origins = set(found) | {o.id for o in own}
    frontier = sorted(origins)
    while frontier:
        fresh: list[str] = []
        for start in range(0, len(frontier), COPY_CHUNK):
            chunk = [ObjectId(i) for i in frontier[start : start + COPY_CHUNK]]
            for copy in repo.copies_of(chunk, limit=len(chunk) * MAX_COPIES_PER_SOURCE):
                if copy.id not in found and copy.id not in origins:
                    found[copy.id] = copy
                    fresh.append(copy.id)
        frontier = fresh
    individual_id = individual.id if individual is not None else None
    return [o for o in found.values() if o.scope_id != individual_id], own


def _rebuild_without(
    store: MemoryStore,
    run: JobRun,
    scope_id: str,
    forgotten: list[Observation],
    *,
    lease: timedelta,
) -> dict[str, Any] | None:
    """Under the scope's consolidation lease: drop the forgotten observations from its
    pending list, and if its history absorbed any, rebuild the text without them and
    redact the versions that held them. The rebuild's outcome, or None if none was needed."""
    oid = ObjectId(scope_id)
    now = utcnow()
    if not store.scopes.acquire_lease(oid, owner=run.job.id, now=now, until=now + lease):
        raise Conflict(f"scope {scope_id} is being consolidated; forgetting retries later")
    try:
        scope = store.scopes.get(oid)
        if scope is None:
            return None
        forgotten_ids = {o.id for o in forgotten}
        pending = [i for i in scope.pending_observation_ids if i in forgotten_ids]
        if pending:
            _repo(store).pull_pending(oid, [ObjectId(i) for i in pending])
            store.agents.adjust_counters(scope.agent_id, now=now, pending=-len(pending))
            scope = store.scopes.get(oid)
            assert scope is not None
        if scope.consolidation_version == 0 or not any(o.consolidated for o in forgotten):
            return None
        first = _first_tainted(store, scope, forgotten_ids)
        if first is None:
            return None
        return _rebuild(store, run, scope, first=first, forgotten_ids=forgotten_ids)
    finally:
        store.scopes.release_lease(oid, owner=run.job.id)


def _first_tainted(store: MemoryStore, scope: Scope, forgotten_ids: set[str]) -> int | None:
    """The first version that absorbed a forgotten observation.

    A consolidated observation that no version names (data migrated with its
    consolidation) taints the whole history: nothing proves a version is clean.
    """
    repo = _repo(store)
    oid = ObjectId(scope.id)
    for low in range(1, scope.consolidation_version + 1, HISTORY_CHUNK):
        high = min(low + HISTORY_CHUNK - 1, scope.consolidation_version)
        for doc in repo.history_absorbed(oid, low_version=low, high_version=high):
            absorbed = {str(i) for i in doc.get("absorbed_observation_ids", [])}
            if absorbed & forgotten_ids:
                return int(doc["version"])
    return 1


def _rebuild(
    store: MemoryStore, run: JobRun, scope: Scope, *, first: int, forgotten_ids: set[str]
) -> dict[str, Any]:
    repo = _repo(store)
    oid = ObjectId(scope.id)
    last = scope.consolidation_version
    keep: list[str] = []
    for low in range(first, last + 1, HISTORY_CHUNK):
        high = min(low + HISTORY_CHUNK - 1, last)
        for doc in repo.history_absorbed(oid, low_version=low, high_version=high):
            keep += [str(i) for i in doc.get("absorbed_observation_ids", [])]
    keep_ids = list(dict.fromkeys(i for i in keep if i not in forgotten_ids))
    remaining = [
        o
        for start in range(0, len(keep_ids), BATCH)
        for o in store.observations.get_many([ObjectId(i) for i in keep_ids[start : start + BATCH]])
        if not o.deleted and o.id not in forgotten_ids
    ]
    remaining.sort(key=lambda o: o.observed_at)
    base_entry = store.consolidations.get(oid, first - 1) if first > 1 else None
    base = base_entry.text if base_entry is not None else None
    text, details = consolidation_fold(
        store=store, llm=run.llm, scope=scope, current=base, observations=remaining
    )
    entry = consolidation_commit(
        store=store,
        scope=scope,
        expected_version=last,
        text=text,
        absorbed_ids=[o.id for o in remaining],
        trigger="forget_user",
        actor=run.job.actor,
        run=details,
        absorbed_were_pending=False,
    )
    redacted = repo.redact_versions(
        oid,
        low_version=first,
        high_version=last,
        marker=REDACTED,
        forgotten=[ObjectId(i) for i in forgotten_ids],
        now=utcnow(),
    )
    return {
        "scope_id": scope.id,
        "scope_type": scope.scope_type,
        "version": entry.version,
        "rebuilt_from_version": first - 1,
        "absorbed": len(remaining),
        "redacted": redacted,
    }
