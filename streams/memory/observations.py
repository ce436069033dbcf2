"""Observations: appending to a scope's log (atomically with its pending list), and reads.

Long because: appending to a scope's log and its pending list is one invariant; single add,
append and the reads it needs stay with it.
"""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bson import ObjectId

from streams.core.contradictions import first_contradicted
from streams.core.documents import MAX_CONTENT_CHARS, Job, Observation, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, seq_before, seq_cursor
from streams.guard.erasure import (
    ERASURE_CHECKED,
    HAND_ADDS,
    refuse_forgotten,
    without_erased,
)
from streams.guard.screening import WriteOrigin, origin_of, screen_observations
from streams.memory.add_writes import (
    APPEND_ATTEMPTS,
    Schedule,
    Transact,
    add_transaction,
    added,
)
from streams.memory.bulk import unused_days_check
from streams.memory.lifecycle import expires_at_check
from streams.memory.observation_changes import observation_update
from streams.memory.supersession import supersede_replaced
from streams.memory.window import WINDOWS
from streams.records.audit import AuditSink
from streams.records.webhooks import observations_changed
from streams.search.dedup import SIMILAR_AT, text_key, token_set
from streams.search.index import search_index_add
from streams.store import MemoryStore, StoreSession
from streams.store.observations import StatusFilter, TextTaken
from streams.store.write_batch import WriteBatch

# An action's way to mark private the live observation a duplicate add matched (with its
# audit entry, in one transaction): the fresh observation.
MarkPrivate = Callable[[Observation], Observation]


def observations_append(
    *,
    store: MemoryStore,
    scope_id: str,
    observations: list[Observation],
    session: StoreSession,
    now: datetime,
    read_before: Scope | None = None,
    duplicates: dict[str, Observation] | None = None,
    writes: WriteBatch | None = None,
    origin: WriteOrigin = "extraction",
    trust_index: bool = False,
    after_read: bool = False,
) -> Scope:
    """Within the caller's transaction: store the observations and make them pending
    (or hold them for review: see `streams.guard.screening.screen_observations`);
    returns the scope as it was before (its pending list tells the caller whether a
    consolidation is due, without reading the scope again).

    An observation whose normalized text a live observation of the scope holds (or an
    earlier one of this list) is not stored: `duplicates` gets its id -> the one kept
    (`streams.search.dedup`). The check is one query by the unique `text_key` index; a concurrent
    writer that stored the same fact in between makes the insert miss on that index, a
    conflict, and the caller's retry then finds it. With `trust_index` that index alone
    catches an exact duplicate (no read: one round trip fewer on the common path); its
    miss aborts the transaction, and the caller's retry must pass False to answer with
    the live observation.

    The scope's sequence counter is claimed with the version in the filter, so
    two concurrent appends cannot share sequence numbers; a miss aborts the
    transaction and the caller retries it whole. `read_before` is the scope as the
    caller read it an instant ago: its sequence is tried without reading the scope again
    (one round trip fewer); if the log moved on since, the claim misses, and the retry
    must pass None to read it inside the transaction. With `writes`, the writes join that
    batch, the claim too when a command went first (its miss is then the flush's Conflict;
    `after_read`: the caller sent one in this transaction already).
    """
    oid = require_object_id(scope_id, what="scope")
    scope = read_before if read_before is not None else store.scopes.get(oid, session=session)
    if scope is None:
        raise NotFound("scope not found")
    _as_given(observations)  # a retried attempt starts from what the caller gave
    # Forget stays forgotten: what a tombstone covers is never stored by the paths that
    # bring memory in without a person choosing it (formation, propagation, import,
    # migration; those that report refusals ask `erased_users` first: this is the floor).
    # A hand add (an API key's or a person's) into a forgotten user's own scope is refused
    # whole (409 `forgotten`): the tombstone marks the scope, read already.
    if origin in ERASURE_CHECKED:
        observations, _refused = without_erased(
            store=store, scope=scope, observations=observations, session=session
        )
        if not observations:
            return scope
    elif origin in HAND_ADDS:
        refuse_forgotten(scope=scope, observations=observations)
    # The guard runs inside the write, before the dedup check (which compares what is
    # stored: redacted text): secrets redacted, flags set, and what must wait for a person
    # held out of the pending list and the search index.
    screen_observations(
        scope=scope,
        observations=observations,
        origin=origin,
        now=now,
        instruction_policy=store.instruction_policy,
    )
    # One bounded read of the scope's newest observations serves both checks below (an
    # import brings its own `contradicts` and `similar_to`). Trusting the index, it goes
    # first: a text it holds (most likely a re-sent add) is read for at once, instead of
    # meeting the index and retrying.
    recent = None
    read = not trust_index
    # Whether a command went first in this transaction (see the claim below).
    sent = read_before is None or after_read
    if trust_index and origin != "import":
        window = WINDOWS.read(store=store, scope=scope, session=session)
        recent, sent = window.texts(), sent or window.sent
        held = {text_key(scope_id, content) for _, content in recent}
        read = any(text_key(scope_id, o.content) in held for o in observations)
    sent = sent or read
    split = _without_duplicates(
        store=store, scope_id=scope_id, observations=observations, session=session, read=read
    )
    if duplicates is not None:
        duplicates.clear()
        duplicates.update(split.duplicates)
    if not split.fresh:
        return scope
    replaced: list[tuple[Observation, str]] = []  # (new, stored id) contradiction pairs
    if origin != "import":
        if recent is None:
            window = WINDOWS.read(store=store, scope=scope, session=session)
            recent, sent = window.texts(), sent or window.sent
        replaced = _mark_contradictions(
            store=store, scope=scope, fresh=split.fresh, recent=recent, session=session, now=now
        )
        sent = sent or bool(replaced)
        _mark_similar(fresh=split.fresh, recent=recent)
    live = [o for o in split.fresh if not o.held]
    # The claim comes before the other writes: a sequence that moved on (a stale
    # `read_before`, a concurrent append) misses before anything else is applied. It
    # joins the batch (one round trip fewer; a miss is the flush's Conflict) when a
    # command went first: on the embedded store a batch is never the transaction's first
    # command (`WriteBatch`); on mongod it may be (`streams.store.flavour`).
    claimed = store.scopes.reserve_observation_seqs(
        oid,
        expected_seq=scope.observation_seq,
        count=len(split.fresh),
        pending_ids=[ObjectId(o.id) for o in live if not o.consolidated],
        now=now,
        # Read at a revision (kept or not), the window holds only while it stands.
        expected_log_rev=scope.log_rev if recent is not None else None,
        session=session,
        writes=writes if sent or store.workarounds.batch_may_lead else None,
    )
    if not claimed:
        raise Conflict("the scope's log moved on; retry")
    for offset, observation in enumerate(split.fresh, start=1):
        observation.seq = scope.observation_seq + offset
    try:
        # In a batch, a duplicate key surfaces at its flush, as a Conflict: retried whole.
        store.observations.insert_many(split.fresh, session=session, writes=writes)
    except TextTaken as exc:  # a concurrent writer stored it since the check: retry
        raise Conflict("the same fact was stored concurrently; retry") from exc
    search_index_add(store=store, observations=live, session=session, writes=writes)
    if scope.scope_type == "individual" and replaced:
        # In a user's own scope the newer wins at once (`streams.memory.supersession`).
        if writes is not None:
            writes.flush()  # the claim first: superseding moves the log's revision
        supersede_replaced(store=store, pairs=replaced, session=session, now=now)
    observations_changed(
        store=store, event="observation.created", observations=live, session=session
    )
    waiting = [o for o in split.fresh if o.review_status == "in_review"]
    observations_changed(store=store, event="review.waiting", observations=waiting, session=session)
    held_count = sum(1 for o in split.fresh if o.held and not o.consolidated)
    if held_count:
        # Callers count every new observation as pending; held ones are not. On this
        # thread's counter shard, as the add's own count: the agent's document itself is
        # what every concurrent add with a held item would write (a conflict each).
        store.agents.adjust_counters(
            scope.agent_id,
            now=now,
            pending=-held_count,
            session=session,
            writes=writes,
            sharded=True,
        )
    return scope


@dataclass(frozen=True)
class _Given:
    """What the caller gave an observation that the screening and the checks change
    (in place): a retried attempt starts from it again, so a mark that an aborted
    attempt made on a window read then (a contradiction with a text since edited, say)
    does not stay."""

    review_status: str | None
    review: dict | None
    contradicts: tuple[str, ...]
    similar_to: str | None


_GIVEN = "_given_before_append"


def _as_given(observations: list[Observation]) -> None:
    for observation in observations:
        given = observation.__dict__.get(_GIVEN)
        if given is None:
            observation.__dict__[_GIVEN] = _Given(
                review_status=observation.review_status,
                review=deepcopy(observation.review),
                contradicts=tuple(observation.contradicts),
                similar_to=observation.similar_to,
            )
            continue
        observation.review_status = given.review_status
        observation.review = deepcopy(given.review)
        observation.contradicts = list(given.contradicts)
        observation.similar_to = given.similar_to


@dataclass(frozen=True)
class _Split:
    fresh: list[Observation]
    duplicates: dict[str, Observation]


def _without_duplicates(
    *,
    store: MemoryStore,
    scope_id: str,
    observations: list[Observation],
    session: StoreSession,
    read: bool = True,
) -> _Split:
    """The observations to store, and the others (id -> the live one with the same text);
    without `read`, only the list's own repeats (the unique index catches the rest)."""
    for observation in observations:
        observation.text_key = text_key(scope_id, observation.content)
    live = (
        store.observations.live_by_text_key(
            [o.text_key for o in observations if o.text_key], session=session
        )
        if read
        else {}
    )
    fresh: list[Observation] = []
    duplicates: dict[str, Observation] = {}
    for observation in observations:
        assert observation.text_key is not None
        kept = live.get(observation.text_key)
        if kept is not None:
            duplicates[observation.id] = kept
        else:
            live[observation.text_key] = observation
            fresh.append(observation)
    return _Split(fresh=fresh, duplicates=duplicates)


def _mark_contradictions(
    *,
    store: MemoryStore,
    scope: Scope,
    fresh: list[Observation],
    recent: list[tuple[str, str]],
    session: StoreSession,
    now: datetime,
) -> list[tuple[Observation, str]]:
    """Flag each new observation that contradicts one of the scope's newest
    `SIMILAR_WINDOW` (`recent`, `streams.core.contradictions`), and that one, with each other's
    id; in a shared scope the new one waits for review (`contradicts:<id>`). The pairs
    (new observation, stored one's id) it flagged: it wrote when there are any."""
    wrote: list[tuple[Observation, str]] = []
    for observation in fresh:
        if observation.consolidated or observation.review_status == "rejected":
            continue
        other = first_contradicted(observation.content, recent)
        if other is None:
            continue
        wrote.append((observation, other))
        observation.contradicts = [other]
        store.observations.add_contradiction(ObjectId(other), observation.id, session=session)
        if scope.scope_type == "individual":
            continue  # the flag shows in the log; the newer wins
        reason = f"contradicts:{other}"
        review = dict(observation.review or {})
        review["reasons"] = list(dict.fromkeys([*(review.get("reasons") or []), reason]))
        review.setdefault("since", now)
        review.setdefault("supporting_group_ids", [])
        observation.review = review
        if observation.review_status is None:
            observation.review_status = "in_review"
    return wrote


def _mark_similar(*, fresh: list[Observation], recent: list[tuple[str, str]]) -> None:
    """Set `similar_to` on a new observation whose words nearly match (`SIMILAR_AT`) one of
    the scope's newest `SIMILAR_WINDOW` live observations (`recent`) or an earlier one of
    this append: it is stored, and the log offers to merge the two. No read of its own."""
    candidates = [(oid, token_set(content)) for oid, content in recent]
    for observation in fresh:
        words = token_set(observation.content)
        if observation.similar_to is None and words:
            for candidate_id, theirs in candidates:
                if theirs and len(words & theirs) / len(words | theirs) >= SIMILAR_AT:
                    observation.similar_to = candidate_id
                    break
        candidates.insert(0, (observation.id, words))


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
    expires_at: datetime | None = None,
    transact: Transact | None = None,
    mark_private: MarkPrivate | None = None,
) -> Observation:
    """Add one observation by hand (operator or agent); it goes to pending, and a
    consolidation job is queued (in `follow_ups`) when that reaches the threshold.

    One transaction holds the observation, its postings, the scope's log, the agent's
    counters, (with `actor`) the audit entry and the threshold's job (`threshold_job`):
    on the embedded store every write outside a transaction is a journal sync of its
    own, which cost more than the add."""
    content = content.strip()
    if not content:
        raise InvalidInput("content must not be empty", details=[{"field": "content"}])
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content is longer than {MAX_CONTENT_CHARS} characters", details=[{"field": "content"}]
        )
    now = utcnow()
    expires_at_check(expires_at, now=now, field_name="expires_at")
    observation = Observation(
        expires_at=expires_at,
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
        origin=origin_of(actor),
        added_by=actor,
    )

    read_before = [scope]  # the first attempt trusts the caller's read; a retry reads anew
    duplicates: dict[str, Observation] = {}

    def add(session: StoreSession, schedule: Schedule, audit: AuditSink | None) -> Scope:
        # Every write below in one round trip where the server takes it (then flushed).
        writes = store.write_batch(session)
        # The first attempt reads neither the scope (the caller's read) nor the same text
        # (the unique index catches it: aborted, retried); a retry reads both anew, so a
        # duplicate add still answers with the live observation and writes nothing.
        first = bool(read_before)
        before = observations_append(
            store=store,
            scope_id=scope.id,
            observations=[observation],
            session=session,
            now=now,
            read_before=read_before.pop() if first else None,
            duplicates=duplicates,
            writes=writes,
            origin=origin_of(actor),
            trust_index=first,
        )
        added(
            store=store,
            audit=audit,
            scope=scope,
            before=before,
            fresh=[] if duplicates else [observation],  # a stored fact: nothing written
            now=now,
            session=session,
            schedule=schedule,
            writes=writes,
        )
        return before

    before = add_transaction(store, transact, add, follow_ups)
    if duplicates:
        return duplicate_kept(
            store=store,
            kept=duplicates[observation.id],
            private=private,
            follow_ups=follow_ups,
            actor=actor,
            mark_private=mark_private,
        )
    WINDOWS.added(store=store, before=before, observations=[observation])
    return observation


def duplicate_kept(
    *,
    store: MemoryStore,
    kept: Observation,
    private: bool,
    follow_ups: list[Job] | None,
    actor: str | None,
    mark_private: MarkPrivate | None = None,
) -> Observation:
    """The answer to an add that matched a live observation: that one, marked `duplicate`;
    an add asking for `private` marks the kept one private: by `mark_private` (an action's:
    the mark, its entry and its follow-up job in one transaction), or without one as an
    edit would (`observation_update`, its job in `follow_ups`)."""
    if private and not kept.private:
        if mark_private is not None:
            kept = mark_private(kept)
        else:
            kept = observation_update(
                store=store, observation=kept, private=True, follow_ups=follow_ups, actor=actor
            )
    return replace(kept, duplicate=True)


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
    include_superseded: bool = True,
    unused_days: int | None = None,
) -> Page[Observation]:
    """A scope's observations, newest first; `text` matches content, case-insensitively;
    without `include_superseded`, only current ones (and the held, the removed if asked);
    `unused_days`: only those no context or search retrieved in that many days (and older
    than that: `streams.memory.unused`)."""
    since = None
    if unused_days is not None:
        since = utcnow() - timedelta(days=unused_days_check(unused_days))
    items, next_before = store.observations.page(
        scope_id=require_object_id(scope.id, what="scope"),
        top_seq=scope.observation_seq,
        before=seq_before(cursor),
        limit=clamp_limit(limit),
        status=status,
        include_deleted=include_deleted,
        private=private,
        text=text,
        include_superseded=include_superseded,
        unused_since=since,
    )
    return Page(items=items, next_cursor=seq_cursor(next_before))
