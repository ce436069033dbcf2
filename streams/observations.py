"""Observations: appending to a scope's log (atomically with its pending list), and reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bson import ObjectId

from streams.activity import activity_record
from streams.audit import audit_record, content_digest
from streams.consolidation_runs import consolidation_due
from streams.documents import Job, Observation, Scope, utcnow
from streams.exceptions import Conflict, InvalidInput, NotFound
from streams.ids import require_object_id
from streams.pagination import Page, clamp_limit, seq_before, seq_cursor
from streams.rebuild import prune_search_terms, sources_changed
from streams.search import search_index_add, search_index_remove
from streams.store import MemoryStore, StoreSession
from streams.store.observations import StatusFilter

MAX_CONTENT_CHARS = 4000
APPEND_ATTEMPTS = 5


def observations_append(
    *,
    store: MemoryStore,
    scope_id: str,
    observations: list[Observation],
    session: StoreSession,
    now: datetime,
    read_before: Scope | None = None,
) -> Scope:
    """Within the caller's transaction: store the observations and make them pending;
    returns the scope as it was before (its pending list tells the caller whether a
    consolidation is due, without reading the scope again).

    The scope's sequence counter is claimed with the version in the filter, so
    two concurrent appends cannot share sequence numbers; a miss aborts the
    transaction and the caller retries it whole. `read_before` is the scope as the
    caller read it an instant ago: its sequence is tried without reading the scope again
    (one round trip fewer); if the log moved on since, the claim misses, and the retry
    must pass None to read it inside the transaction.
    """
    oid = require_object_id(scope_id, what="scope")
    scope = read_before if read_before is not None else store.scopes.get(oid, session=session)
    if scope is None:
        raise NotFound("scope not found")
    # The claim comes first: a sequence that moved on (a stale `read_before`, a concurrent
    # append) then misses before anything is written, instead of colliding on the
    # (scope, seq) index.
    claimed = store.scopes.reserve_observation_seqs(
        oid,
        expected_seq=scope.observation_seq,
        count=len(observations),
        pending_ids=[ObjectId(o.id) for o in observations if not o.consolidated],
        now=now,
        session=session,
    )
    if not claimed:
        raise Conflict("the scope's log moved on; retry")
    for offset, observation in enumerate(observations, start=1):
        observation.seq = scope.observation_seq + offset
    store.observations.insert_many(observations, session=session)
    search_index_add(store=store, observations=observations, session=session)
    return scope


def observation_add(
    *,
    store: MemoryStore,
    scope: Scope,
    content: str,
    private: bool = False,
    observed_at: datetime | None = None,
    source_session_id: str | None = None,
    source_message_ids: list[str] | None = None,
    related_user_ids: list[str] | None = None,
    follow_ups: list[Job] | None = None,
    actor: str | None = None,
) -> Observation:
    """Add one observation by hand (operator or agent); it goes to pending, and a
    consolidation job is queued (in `follow_ups`) when that reaches the threshold.

    One transaction holds the observation, its postings, the scope's log, the agent's
    counters and (with `actor`) the audit entry: on the embedded store every write
    outside a transaction is a journal sync of its own, which cost more than the add."""
    content = content.strip()
    if not content:
        raise InvalidInput("content must not be empty", details=[{"field": "content"}])
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content is longer than {MAX_CONTENT_CHARS} characters", details=[{"field": "content"}]
        )
    now = utcnow()
    observation = Observation(
        scope_id=scope.id,
        agent_id=scope.agent_id,
        content=content,
        observed_at=observed_at or now,
        created_at=now,
        private=private,
        source_session_id=source_session_id,
        source_message_ids=source_message_ids or [],
        related_user_ids=related_user_ids
        if related_user_ids is not None
        else ([scope.user_id] if scope.user_id else []),
    )

    read_before = [scope]  # the first attempt trusts the caller's read; a retry reads anew

    def add(session: StoreSession) -> Scope:
        before = observations_append(
            store=store,
            scope_id=scope.id,
            observations=[observation],
            session=session,
            now=now,
            read_before=read_before.pop() if read_before else None,
        )
        if actor is not None:
            audit_record(
                store=store,
                actor=actor,
                action="observation.create",
                object_type="observation",
                object_id=observation.id,
                agent_id=scope.agent_id,
                summary={
                    "scope_id": scope.id,
                    "content": content_digest(observation.content),
                    "private": observation.private,
                },
                at=now,
                session=session,
            )
        counters_add(store=store, agent_id=scope.agent_id, added=1, now=now, session=session)
        return before

    before = store.in_transaction(add, attempts=APPEND_ATTEMPTS)
    threshold_check(store=store, before=before, added=1, follow_ups=follow_ups)
    return observation


def counters_add(
    *, store: MemoryStore, agent_id: str, added: int, now: datetime, session: StoreSession
) -> None:
    """The agent's counters and its day's count, inside a short add's transaction: written
    last, so the agent's document is held only until the commit that follows."""
    store.agents.adjust_counters(
        agent_id, now=now, observations=added, pending=added, session=session
    )
    activity_record(store=store, agent_id=agent_id, now=now, observations=added, session=session)


def threshold_check(
    *, store: MemoryStore, before: Scope, added: int, follow_ups: list[Job] | None
) -> None:
    """Queue a consolidation when the add filled the pending list up to the threshold;
    below it (almost every add) no further read."""
    if before.pending_count + added < before.consolidation_threshold:
        return
    job = consolidation_due(store=store, scope_id=before.id, trigger="threshold")
    if job is not None and follow_ups is not None:
        follow_ups.append(job)


def append_in_transaction(
    *, store: MemoryStore, scope_id: str, observations: list[Observation], now: datetime
) -> None:
    """`observations_append` in a transaction of its own, retried when the log moved on."""
    store.in_transaction(
        lambda session: observations_append(
            store=store, scope_id=scope_id, observations=observations, session=session, now=now
        ),
        attempts=APPEND_ATTEMPTS,
    )


def observation_get(
    *, store: MemoryStore, observation_id: str, agent_ids: frozenset[str] | None = None
) -> Observation:
    observation = store.observations.get(require_object_id(observation_id, what="observation"))
    if observation is None or (agent_ids is not None and observation.agent_id not in agent_ids):
        raise NotFound("observation not found")
    return observation


def observation_list(
    *,
    store: MemoryStore,
    scope: Scope,
    status: StatusFilter = "all",
    include_deleted: bool = False,
    private: bool | None = None,
    text: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[Observation]:
    """A scope's observations, newest first; `text` matches content, case-insensitively."""
    items, next_before = store.observations.page(
        scope_id=require_object_id(scope.id, what="scope"),
        top_seq=scope.observation_seq,
        before=seq_before(cursor),
        limit=clamp_limit(limit),
        status=status,
        include_deleted=include_deleted,
        private=private,
        text=text,
    )
    return Page(items=items, next_cursor=seq_cursor(next_before))


def observation_update(
    *,
    store: MemoryStore,
    observation: Observation,
    content: str | None = None,
    private: bool | None = None,
    follow_ups: list[Job] | None = None,
) -> Observation:
    """Correct an observation's content or mark it private; returns the fresh observation.

    A deleted observation is kept as it was, for the audit: changing it is a conflict.
    What was derived from the old text (or, once private, from the text at all) follows:
    see `streams.rebuild.sources_changed`; its rebuild jobs go to `follow_ups`.
    """
    fields: dict[str, object] = {}
    if content is not None:
        content = content.strip()
        if not content:
            raise InvalidInput("content must not be empty", details=[{"field": "content"}])
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(
                f"content is longer than {MAX_CONTENT_CHARS} characters",
                details=[{"field": "content"}],
            )
        fields["content"] = content
        if content != observation.content:
            # Its vector described the old text: text ranking alone serves it from now on.
            fields.update(embedding=None, embedding_model=None)
    if private is not None:
        fields["private"] = private
    if not fields:
        return observation
    if observation.deleted:
        raise Conflict("the observation is deleted; it cannot be changed")
    oid = require_object_id(observation.id, what="observation")

    def change(session: StoreSession) -> None:
        if not store.observations.update_fields(oid, fields, session=session):
            raise NotFound("observation not found")
        if "content" in fields and fields["content"] != observation.content:
            # Re-index: the old content's terms out, the new content's in, atomically.
            search_index_remove(store=store, observations=[observation], session=session)
            renewed = replace(observation, content=str(fields["content"]))
            search_index_add(store=store, observations=[renewed], session=session)

    store.in_transaction(change)
    fresh = store.observations.get(oid)
    if fresh is None:
        raise NotFound("observation not found")
    jobs = follow_ups if follow_ups is not None else []
    if fresh.content != observation.content:
        prune_search_terms(store=store, scope_id=observation.scope_id, texts=[observation.content])
    if fresh.private and not observation.private:
        sources_changed(store=store, observation=fresh, change="private", follow_ups=jobs)
    elif fresh.content != observation.content:
        sources_changed(store=store, observation=fresh, change="edit", follow_ups=jobs)
    return fresh


def observation_delete(
    *, store: MemoryStore, observation: Observation, follow_ups: list[Job] | None = None
) -> None:
    """Soft delete: kept for the audit, out of every context, search, default list and
    pending count; consolidations that absorbed it are rebuilt without it (jobs in
    `follow_ups`) and its propagated copies are removed.

    Deleting a deleted observation changes nothing (its first deletion time stands).
    """
    if observation.deleted:
        return
    oid = require_object_id(observation.id, what="observation")
    scope_oid = require_object_id(observation.scope_id, what="scope")
    was_pending = deleted = False

    def delete(session: StoreSession) -> None:
        nonlocal was_pending, deleted
        deleted = store.observations.mark_deleted(oid, now=utcnow(), session=session)
        if deleted:
            search_index_remove(store=store, observations=[observation], session=session)
            was_pending = store.scopes.pull_pending(scope_oid, [oid], session=session) > 0
            store.scopes.count_deleted(scope_oid, session=session)
        elif store.observations.get(oid) is None:
            raise NotFound("observation not found")

    store.in_transaction(delete)
    if deleted:
        # A deleted observation leaves every count: the scope's, the agent's, pending.
        store.agents.adjust_counters(
            observation.agent_id, now=utcnow(), observations=-1, pending=-int(was_pending)
        )
    prune_search_terms(store=store, scope_id=observation.scope_id, texts=[observation.content])
    jobs = follow_ups if follow_ups is not None else []
    sources_changed(store=store, observation=observation, change="delete", follow_ups=jobs)
