"""Derived memory follows its sources: rebuild a scope's consolidation without old text.

A consolidation holds the text of every observation it absorbed, and each version
is written from the one before. When an absorbed observation is deleted, edited or
marked private (or its user is forgotten), every scope whose history holds it,
directly or through propagated copies, is rebuilt: its last version from before
the observation, plus what the later versions absorbed (without the removed ones,
with the edited ones' new text), go through one consolidation call into a new
version, and the versions that held the old text are redacted.

Two ways in. After a delete/edit/private, `streams.memory.source_change` flags each
scope (`rebuild_observation_ids`: "rebuild pending" in the API and UI) and queues a
`rebuild` job per scope in the change's transaction, and its job removes the
propagated copies before the rebuilds run (`payload.after`); the rebuild clears the
flag in the same transaction that commits the new version, so a failing model leaves
the scope flagged and the job retried. Forget-user calls `rebuild_scope` directly for
each shared scope, inside its own job.

Long because: one rebuild's steps (the first tainted version, the unredacted base, what
is refolded, the redaction committed with the new version) read in order, beside the
copies and search terms that its job removes before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Job, Observation, Scope, utcnow
from streams.core.exceptions import Conflict
from streams.jobs import JobRun, job_create, scope_lease_take
from streams.memory.consolidation import consolidation_commit
from streams.memory.consolidation_chunks import DEFAULT_CHUNK_TOKENS
from streams.memory.consolidation_runs import Chunking, consolidation_pass
from streams.records.context_scrub import (
    context_log_forget_versions,
)
from streams.search.index import search_index_forget
from streams.search.text import term_counts
from streams.store import MemoryStore, StoreSession
from streams.store.privacy import BATCH, PrivacyRepository

Change = Literal["delete", "edit", "private"]
REBUILT = "[redacted: this version held text that was since deleted, corrected or made private]"
HISTORY_CHUNK = 200
COPY_CHUNK = 200
MAX_COPIES_PER_SOURCE = 20
LEASE = timedelta(minutes=5)


def _repo(store: MemoryStore) -> PrivacyRepository:
    return store.privacy


# -- after a change (`streams.memory.source_change`): rebuild jobs, copies, search terms ----


def rebuild_due(
    *,
    store: MemoryStore,
    scope_id: str,
    trigger: str,
    session: StoreSession | None = None,
    after: str | None = None,
) -> Job | None:
    """A rebuild job for the scope, unless one is queued already (a running one may have
    read the flags before the new one arrived: the queued job takes the rest). With
    `after`, the rebuild waits for that job, and a queued one is made to wait too and
    returned (whoever runs `after` sends it once done)."""
    oid = ObjectId(scope_id)
    queued = store.jobs.active_for_scope(oid, "rebuild", statuses=["queued"], session=session)
    if queued is not None:
        if after is None:
            return None
        if store.jobs.wait_for(ObjectId(queued.id), after, session=session):
            return queued
    scope = store.scopes.get(oid)
    if scope is None:
        return None
    return job_create(
        store=store,
        kind="rebuild",
        agent_id=scope.agent_id,
        scope_id=scope_id,
        trigger=trigger,
        payload={"after": [after]} if after is not None else None,
        session=session,
    )


def copies_closure(repo: PrivacyRepository, origin_ids: list[str]) -> list[Observation]:
    """The propagated copies of these observations, and the copies of those copies."""
    found: dict[str, Observation] = {}
    seen = set(origin_ids)
    frontier = sorted(seen)
    while frontier:
        fresh: list[str] = []
        for start in range(0, len(frontier), COPY_CHUNK):
            chunk = [ObjectId(i) for i in frontier[start : start + COPY_CHUNK]]
            for copy in repo.copies_of(chunk, limit=len(chunk) * MAX_COPIES_PER_SOURCE):
                if copy.id not in seen:
                    seen.add(copy.id)
                    found[copy.id] = copy
                    fresh.append(copy.id)
        frontier = fresh
    return list(found.values())


def remove_copies(*, store: MemoryStore, copies: list[Observation]) -> int:
    """Delete propagated copies for good (out of search, pending lists and counters)."""
    repo = _repo(store)
    by_scope: dict[str, list[Observation]] = {}
    for copy in copies:
        by_scope.setdefault(copy.scope_id, []).append(copy)
    removed = 0
    now = utcnow()
    for scope_id, observations in sorted(by_scope.items()):
        forget_in_search(store=store, scope_id=scope_id, observations=observations)
        ids = [ObjectId(o.id) for o in observations]
        count = repo.delete_observations(ObjectId(scope_id), ids)
        if count:
            # A soft-deleted copy left the counts when it was deleted.
            counted = min(count, sum(1 for o in observations if not o.deleted))
            repo.unlink_observations(ObjectId(scope_id), ids, count=counted)
            pending = sum(1 for o in observations if o.status == "pending" and not o.deleted)
            store.agents.adjust_counters(
                observations[0].agent_id, now=now, observations=-counted, pending=-pending
            )
        removed += count
    return removed


def forget_in_search(*, store: MemoryStore, scope_id: str, observations: list[Observation]) -> None:
    """Out of the search index, with the terms no other observation of the scope holds
    (a term alone, a name or a place, can be what was removed)."""
    search_index_forget(store=store, observations=observations)
    prune_search_terms(store=store, scope_id=scope_id, texts=[o.content for o in observations])


def prune_search_terms(
    *, store: MemoryStore, scope_id: str, texts: list[str], session: StoreSession | None = None
) -> None:
    """Drop the scope's term documents of these texts that no observation holds any more
    (after a delete or an edit the old words would stay listed with a count of zero);
    with `session`, in the transaction that took the texts out of search."""
    terms = sorted({t for text in texts for t in term_counts(text)})
    _repo(store).prune_search_terms(ObjectId(scope_id), terms, session=session)


# -- the rebuild ----------------------------------------------------------------------------


def rebuild_run(
    *,
    store: MemoryStore,
    run: JobRun,
    lease: timedelta = LEASE,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
) -> None:
    """The work of a rebuild job: rebuild the scope without what its flags name (folded
    in chunks of `chunk_tokens`, as a consolidation is)."""
    assert run.job.scope_id is not None
    waiting = [
        job_id
        for job_id in run.job.payload.get("after", [])
        if (before := store.jobs.get(ObjectId(job_id))) is not None and before.status != "succeeded"
    ]
    if waiting:  # a change's copies are still there: it would fold them back in
        raise Conflict(f"the rebuild waits for job {', '.join(waiting)} to remove copies first")
    scope = store.scopes.get(ObjectId(run.job.scope_id))
    if scope is None or not scope.needs_rebuild:
        run.result = {"note": "nothing to rebuild"}
        return
    ids = list(scope.rebuild_observation_ids)
    now_live = store.observations.get_many([ObjectId(i) for i in ids])
    # An observation re-filed into another scope (a bulk move) left this one: removed here.
    changed = {
        o.id
        for o in now_live
        if not o.deleted and not o.private and not o.is_expired() and o.scope_id == scope.id
    }
    outcome = rebuild_scope(
        store=store,
        run=run,
        scope_id=scope.id,
        removed=set(ids) - changed,
        changed=changed,
        trigger="rebuild",
        marker=REBUILT,
        lease=lease,
        chunk_tokens=chunk_tokens,
    )
    run.result = outcome or {"note": "no version held the changed observations"}
    if outcome is not None and outcome["changed"] and _propagates(scope):
        # The edited observations' copies were removed: propagation offers the new text.
        run.follow_ups.append(
            job_create(
                store=store,
                kind="propagation",
                agent_id=scope.agent_id,
                scope_id=scope.id,
                trigger="rebuild",
                payload={"version": outcome["version"], "observation_ids": outcome["changed"]},
            )
        )


def rebuild_scope(
    *,
    store: MemoryStore,
    run: JobRun,
    scope_id: str,
    removed: set[str],
    changed: set[str] | None = None,
    trigger: str,
    marker: str,
    lease: timedelta = LEASE,
    absorbed: bool = True,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
) -> dict[str, Any] | None:
    """Under the scope's consolidation lease: drop `removed` from its pending list, and if
    its history absorbed any of `removed` or `changed`, fold a new version without the
    removed ones (with the changed ones' current text) and redact the versions that held
    the old text. The rebuild's outcome, or None if none was needed (`absorbed=False`:
    the caller knows none of them was ever consolidated).

    Conflict when another run holds the lease: the job fails and is retried.
    """
    changed = changed or set()
    oid = ObjectId(scope_id)
    now = utcnow()
    if not scope_lease_take(store=store, run=run, scope_id=scope_id, lease=lease):
        return None  # the scope is gone
    try:
        scope = store.scopes.get(oid)
        if scope is None:
            return None
        pending = [i for i in scope.pending_observation_ids if i in removed]
        if pending:
            store.scopes.pull_pending(oid, [ObjectId(i) for i in pending])
            store.agents.adjust_counters(scope.agent_id, now=now, pending=-len(pending))
            scope = store.scopes.get(oid)
            assert scope is not None
        tainted = removed | changed
        first = None
        if absorbed and scope.consolidation_version:
            first = _first_tainted(store, scope, tainted)
        if first is None:
            store.scopes.unflag_rebuild(oid, [ObjectId(i) for i in tainted])
            return None
        return _rebuild(
            store,
            run,
            scope,
            first=first,
            removed=removed,
            changed=changed,
            trigger=trigger,
            marker=marker,
            chunk_tokens=chunk_tokens,
        )
    finally:
        store.scopes.release_lease(oid, owner=run.job.id)


def _first_tainted(store: MemoryStore, scope: Scope, tainted: set[str]) -> int | None:
    """The first version that absorbed a tainted observation.

    A consolidated observation that no version names (data migrated with its
    consolidation) taints the whole history: nothing proves a version is clean.
    """
    repo = _repo(store)
    oid = ObjectId(scope.id)
    for low in range(1, scope.consolidation_version + 1, HISTORY_CHUNK):
        high = min(low + HISTORY_CHUNK - 1, scope.consolidation_version)
        for doc in repo.history_absorbed(oid, low_version=low, high_version=high):
            absorbed = {str(i) for i in doc.get("absorbed_observation_ids", [])}
            if absorbed & tainted:
                return int(doc["version"])
    return 1


def _rebuild(
    store: MemoryStore,
    run: JobRun,
    scope: Scope,
    *,
    first: int,
    removed: set[str],
    changed: set[str],
    trigger: str,
    marker: str,
    chunk_tokens: int,
) -> dict[str, Any]:
    repo = _repo(store)
    oid = ObjectId(scope.id)
    last = scope.consolidation_version
    first, base_entry = _unredacted_base(store, oid, first)
    remaining = _refolded(store, scope, first, removed)
    # Folded from the base in chunks, as a consolidation is (a rebuild of a long history
    # refolds everything its versions absorbed since). Nothing is held for review: these
    # were consolidated already.
    base = replace(scope, consolidation=base_entry.text if base_entry is not None else None)
    text, details, _, _ = consolidation_pass(
        store=store,
        llm=run.llm,
        scope=base,
        folded=remaining,
        hold=lambda pairs: [],
        # No fidelity floor here: a lossy answer must not keep removed text in the
        # history (the echo, log-line and no-sentence checks still refuse an answer).
        floor=0.0,
        chunking=Chunking(tokens=chunk_tokens),
    )
    # The texts the redaction replaces, for the context log's records that showed them.
    old_texts = repo.history_texts(oid, low_version=first, high_version=last)
    redacted = [0]  # how many versions the commit's redaction rewrote
    entry = consolidation_commit(
        store=store,
        scope=scope,
        expected_version=last,
        text=text,
        absorbed_ids=[o.id for o in remaining],
        trigger=trigger,
        actor=run.job.actor,
        run=details,
        absorbed_were_pending=False,
        # Marked consolidated already, but for any a restore put back to pending.
        newly_absorbed_ids=[o.id for o in remaining if not o.consolidated],
        rebuilt_ids=sorted(removed | changed),
        warning=details.warning,
        also=_redaction(repo, oid, first, last, marker, removed, redacted),
    )
    context_log_forget_versions(store=store, scope_id=scope.id, texts=old_texts)
    back = len({o.id for o in remaining} & set(scope.pending_observation_ids))
    if back:
        store.agents.adjust_counters(scope.agent_id, now=utcnow(), pending=-back)
    return {
        "scope_id": scope.id,
        "scope_type": scope.scope_type,
        "version": entry.version,
        "rebuilt_from_version": first - 1,
        "absorbed": len(remaining),
        "removed": len(removed),
        "changed": sorted(o.id for o in remaining if o.id in changed),
        "redacted": redacted[0],
        "chunks": details.chunks,
    }


def _redaction(
    repo: PrivacyRepository,
    oid: ObjectId,
    first: int,
    last: int,
    marker: str,
    removed: set[str],
    redacted: list[int],
) -> Callable[[StoreSession], None]:
    """The commit's other write: versions `first`..`last` redacted (`marker` for what
    quoted the removed observations); `redacted[0]` is how many it rewrote."""

    def redact(session: StoreSession) -> None:
        redacted[0] = repo.redact_versions(
            oid,
            low_version=first,
            high_version=last,
            marker=marker,
            forgotten=[ObjectId(i) for i in removed],
            now=utcnow(),
            session=session,
        )

    return redact


def _unredacted_base(
    store: MemoryStore, oid: ObjectId, first: int
) -> tuple[int, ConsolidationVersion | None]:
    """The first version to rebuild and the version before it, the base: a base an
    earlier rebuild redacted is passed over (start before it, and refold what it absorbed)."""
    base_entry = store.consolidations.get(oid, first - 1) if first > 1 else None
    while base_entry is not None and base_entry.redacted:
        first -= 1
        base_entry = store.consolidations.get(oid, first - 1) if first > 1 else None
    return first, base_entry


def _refolded(store: MemoryStore, scope: Scope, first: int, removed: set[str]) -> list[Observation]:
    """What the versions from `first` absorbed that is still current, oldest first: not
    removed, deleted, superseded (a rebuild folds only the current facts), private,
    expired or moved away."""
    repo = _repo(store)
    oid = ObjectId(scope.id)
    last = scope.consolidation_version
    keep: list[str] = []
    for low in range(first, last + 1, HISTORY_CHUNK):
        high = min(low + HISTORY_CHUNK - 1, last)
        for doc in repo.history_absorbed(oid, low_version=low, high_version=high):
            keep += [str(i) for i in doc.get("absorbed_observation_ids", [])]
    keep_ids = list(dict.fromkeys(i for i in keep if i not in removed))
    remaining = [
        o
        for o in _absorbed_observations(store, scope, keep_ids)
        if not o.deleted
        and not o.superseded
        and not o.private
        and not o.is_expired()
        and o.id not in removed
        and o.scope_id == scope.id
    ]
    remaining.sort(key=lambda o: o.observed_at)
    return remaining


def _absorbed_observations(store: MemoryStore, scope: Scope, ids: list[str]) -> list[Observation]:
    """The scope's observations with these ids. When they are a good part of its log, by
    `seq` ranges of the log (the embedded store answers a 500-id `$in` in ~2 s, a 500-long
    `seq` range in ms); otherwise by id, in parts."""
    if len(ids) * 4 >= scope.observation_seq:
        wanted = set(ids)
        oid = ObjectId(scope.id)
        return [
            o
            for low in range(0, scope.observation_seq, BATCH)
            for o in _repo(store).scope_observations(
                oid, low_seq=low, high_seq=min(low + BATCH, scope.observation_seq)
            )
            if o.id in wanted
        ]
    return store.observations.get_many([ObjectId(i) for i in ids])


def _propagates(scope: Scope) -> bool:
    return bool(scope.groups) if scope.scope_type == "individual" else scope.scope_type == "group"
