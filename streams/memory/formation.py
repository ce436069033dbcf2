"""Formation: buffer a session's messages, and turn them into observations with one LLM call.

The write path of `domain.md`: messages are buffered idempotently by id; a
formation triggers on 45 messages or 1000 weighted tokens (never under 4), for a
cold session, or at once when a user asks to remember something (at any count);
one formation makes exactly one extraction call whatever the number of groups and
shards; the observations are stored, pushed to their
scopes' pending lists and the messages marked formed in one transaction, so a
crash leaves all of it or none of it, and a retry never duplicates.

Long because: one session's way in (buffer, claim, the extraction call, the commit per scope)
shares the buffer's claim and its settings; each step needs the one before.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.core.documents import BufferedMessage, Job, Observation, Scope, utcnow
from streams.core.exceptions import Conflict
from streams.guard.erasure import erased_users, refused_entries
from streams.guard.screening import screened
from streams.jobs import JobRun, job_create
from streams.memory.answer_checks import EmptyExtraction, extraction_expected
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.extraction import ExtractedItem, ExtractionPlan, plan_extraction
from streams.memory.extraction_answer import parse_extraction_counted
from streams.memory.large_work import large_work
from streams.memory.observation_batch import observations_append_once
from streams.memory.requests import extraction_request
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.records.activity import activity_record
from streams.search.memory_requests import asks_to_remember
from streams.store import MemoryStore, StoreSession

ROLE_WEIGHTS = {"user": 1.0, "tool": 0.5, "assistant": 0.2}
OTHER_ROLE_WEIGHT = 0.5
MAX_MESSAGES_PER_FORMATION = 200
COMMIT_ATTEMPTS = 5


@dataclass(frozen=True)
class FormationSettings:
    max_messages: int = 45
    max_tokens: int = 1000
    min_messages: int = 4
    cold_minutes: int = 10
    max_observations: int = 5
    max_words: int = 50
    # A formation's claim on its session lapses this long after its last renewal.
    lease_seconds: int = 30


@dataclass(frozen=True)
class IncomingMessage:
    id: str
    role: str
    content: str
    created_at: datetime | None = None
    # The speaker of this message in a group chat; None: the request's user.
    user_id: str | None = None
    user_name: str | None = None


@dataclass(frozen=True)
class IngestResult:
    accepted: int
    duplicates: int
    unformed_messages: int
    formation_job: Job | None
    # Messages of forgotten users, not stored: [{"user_id", "reason": "forgotten"}].
    refused: list[dict[str, str]] = field(default_factory=list)


def weighted_tokens(role: str, content: str) -> float:
    """chars / 4.5, weighted by role (user 1.0, tool 0.5, assistant 0.2, other 0.5)."""
    return len(content) / 4.5 * ROLE_WEIGHTS.get(role, OTHER_ROLE_WEIGHT)


def messages_ingest(
    *,
    store: MemoryStore,
    agent_id: str,
    session_id: str,
    user_id: str,
    user_name: str | None,
    groups: list[dict[str, str]],
    messages: list[IncomingMessage],
    settings: FormationSettings,
    session: StoreSession | None = None,
) -> IngestResult:
    """Buffer the messages (re-sent ids are duplicates) and start a formation if one is due.

    The messages, the session's counters, the formation's claim and job are written in
    one transaction (with `session`, the calling action's, which adds its audit entry):
    the counters are what is stored, the trigger reads the counters that transaction
    wrote, and the store syncs its journal once per ingest, not four times (on a small
    host that sync is what other callers wait behind).
    """
    now = utcnow()
    store.agents.ensure(agent_id, now=now)
    buffered = [
        BufferedMessage(
            agent_id=agent_id,
            session_id=session_id,
            message_id=m.id,
            role=m.role,
            content=screened(m.content),  # secrets a caller sends are never stored
            created_at=m.created_at or now,
            received_at=now,
            user_id=m.user_id or user_id,
            user_name=m.user_name or (user_name if (m.user_id or user_id) == user_id else None),
            groups=groups,
            weighted_tokens=weighted_tokens(m.role, m.content),
        )
        for m in _first_of_each_id(messages)
    ]
    # Forget stays forgotten: a late message of a forgotten user is not buffered, and a
    # session whose user was forgotten stores nothing at all (its buffer names them).
    erased = erased_users(
        store=store, agent_id=agent_id, user_ids=[user_id, *(m.user_id for m in buffered)]
    )
    if erased:
        refused = refused_entries(erased)
        if user_id in erased:
            return IngestResult(
                accepted=0,
                duplicates=0,
                unformed_messages=0,
                formation_job=None,
                refused=refused,
            )
        buffered = [m for m in buffered if m.user_id not in erased]
    dropped = sum(1 for m in messages if (m.user_id or user_id) in erased)

    def buffer_messages(session: StoreSession) -> IngestResult:
        accepted, buffer = store.sessions.ingest(
            buffered,
            agent_id=agent_id,
            session_id=session_id,
            user_id=user_id,
            user_name=user_name,
            groups=groups,
            min_messages=settings.min_messages,
            now=now,
            session=session,
        )
        job = None
        trigger = _formation_trigger(accepted, buffer, settings) if accepted else None
        if trigger is not None:
            job = _claim_and_create(
                store, buffer, trigger=trigger, now=now, settings=settings, session=session
            )
        result = IngestResult(
            accepted=len(accepted),
            duplicates=len(messages) - dropped - len(accepted),
            unformed_messages=buffer["unformed_count"],
            formation_job=job,
            refused=refused_entries(erased),
        )
        return result

    if session is not None:
        return buffer_messages(session)
    return store.in_transaction(buffer_messages, attempts=COMMIT_ATTEMPTS)


def formation_request(
    *,
    store: MemoryStore,
    agent_id: str,
    session_id: str,
    trigger: str,
    settings: FormationSettings | None = None,
    session: StoreSession | None = None,
) -> Job:
    """Form now whatever is unformed (end of a conversation), even fewer messages than the
    automatic minimum: the caller knows the conversation is over. 409 if nothing is
    unformed or a formation of the session is running (a failed one holds nothing).
    With `session`, the claim and the job are written in the caller's transaction."""
    buffer = store.sessions.get_buffer(agent_id, session_id, session=session)
    if buffer is None or buffer["unformed_count"] <= 0:
        raise Conflict("nothing to form: the session has no unformed messages")
    job = _claim_and_create(
        store,
        buffer,
        trigger=trigger,
        now=utcnow(),
        settings=settings or FormationSettings(),
        session=session,
    )
    if job is None:
        raise Conflict("a formation of this session is already under way")
    return job


def cold_sessions_sweep(
    *, store: MemoryStore, settings: FormationSettings, limit: int = 100
) -> list[Job]:
    """Formations for sessions idle long enough with at least the minimum unformed messages."""
    now = utcnow()
    idle_before = now - timedelta(minutes=settings.cold_minutes)
    jobs = []
    for buffer in store.sessions.cold_buffers(idle_before=idle_before, limit=limit):
        if buffer["unformed_count"] >= settings.min_messages:
            job = _claim_and_create(
                store, buffer, trigger="cold_session", now=now, settings=settings
            )
            if job is not None:
                jobs.append(job)
    return jobs


def formation_run(*, store: MemoryStore, run: JobRun, settings: FormationSettings) -> None:
    """The work of a formation job: one extraction call, then one all-or-nothing commit.

    The job (re-)claims its session first: a retried job whose claim lapsed takes it
    back, unless another formation holds it (this one then has nothing to do). A failure
    releases the session at once, so `/form` can start again without waiting.
    """
    job = run.job
    assert job.session_id is not None
    buffer = store.sessions.get_buffer(job.agent_id, job.session_id)
    if buffer is None:
        run.result = {"messages": 0, "observations": 0, "dropped": 0, "note": "nothing unformed"}
        return
    now = utcnow()
    job_oid = ObjectId(job.id)
    if not store.sessions.claim_formation(
        buffer["_id"],
        job_id=job_oid,
        now=now,
        stale_before=now - timedelta(seconds=settings.lease_seconds),
    ):
        run.result = {"messages": 0, "observations": 0, "dropped": 0, "note": "superseded"}
        return
    run.renewals.append(
        lambda at: store.sessions.renew_claim(buffer["_id"], job_id=job_oid, now=at)
    )
    try:
        _form(store, run, buffer, settings)
    except BaseException:
        store.sessions.release_claim(buffer["_id"], job_id=job_oid)
        raise


def _form(
    store: MemoryStore, run: JobRun, buffer: dict[str, Any], settings: FormationSettings
) -> None:
    job = run.job
    assert job.session_id is not None
    messages = store.sessions.unformed(
        job.agent_id, job.session_id, limit=MAX_MESSAGES_PER_FORMATION
    )
    if not messages:
        run.result = {"messages": 0, "observations": 0, "dropped": 0, "note": "nothing unformed"}
        store.sessions.release_claim(buffer["_id"], job_id=ObjectId(job.id))
        return
    plan: ExtractionPlan = plan_extraction(
        store=store, buffer=buffer, messages=messages, settings=settings
    )
    answer = run.llm.complete(extraction_request(plan))
    context = plan.context
    items, drops = parse_extraction_counted(
        answer.text, plan=plan, max_items=context.max_observations, max_words=context.max_words
    )
    counted = {"dropped": drops.total, **drops.result(), "model": answer.model}
    if not items and (expected := extraction_expected(plan.context)):
        _refuse_empty(run, plan, len(messages), counted, expected)
    now = utcnow()
    by_scope, paused = _observations_by_scope(store, job, items, messages, now)
    duplicates: dict[str, Observation] = {}
    with large_work(sum(len(m.content) for m in messages)):
        committed = formation_commit(
            store=store,
            job=job,
            buffer=buffer,
            messages=messages,
            by_scope=by_scope,
            settings=settings,
            now=now,
            duplicates=duplicates,
        )
    if not committed:
        run.result = {"messages": len(messages), "observations": 0, "dropped": drops.total}
        run.result["note"] = "already formed: an earlier commit of these messages stored them"
        store.sessions.release_claim(buffer["_id"], job_id=ObjectId(job.id))
        return
    by_scope = {
        scope_id: (scope, [o for o in obs if o.id not in duplicates])
        for scope_id, (scope, obs) in by_scope.items()
    }
    _after_commit(store, run, plan, by_scope, now=now, settings=settings)
    run.result = {
        "messages": len(messages),
        "observations": sum(len(obs) for _, obs in by_scope.values()),
        **counted,
        "duplicates": len(duplicates),
        "dropped_paused": paused,
        "speakers": len(plan.speakers),
        "scopes": {scope.id: len(obs) for scope, obs in by_scope.values()},
        "prompt_version": plan.resolved.template.version or 0,  # v0: the code default
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
    }


def _refuse_empty(
    run: JobRun, plan: ExtractionPlan, messages: int, counted: dict[str, Any], expected: Any
) -> None:
    """Nothing usable (no item, or only items the parser dropped: a copied list of
    choices as the label) where the offline rules find facts: not a success."""
    run.result = {
        "messages": messages,
        "observations": 0,
        **counted,
        "outcome": "empty",
        "offline_found": expected,
        "prompt_version": plan.resolved.template.version or 0,
    }
    dropped = counted["dropped"]
    what = f"only {dropped} unusable item(s)" if dropped else "no observations"
    raise EmptyExtraction(
        f"the extraction answered {what} where the offline rules find "
        f"{expected}; the messages stay unformed for a retry"
    )


def _observations_by_scope(
    store: MemoryStore,
    job: Job,
    items: list[ExtractedItem],
    messages: list[BufferedMessage],
    now: datetime,
) -> tuple[dict[str, tuple[Scope, list[Observation]]], int]:
    """The observations to store, by scope, and how many items went to a paused scope."""
    by_scope: dict[str, tuple[Scope, list[Observation]]] = {}
    paused = 0
    for item in items:
        scope, _ = scope_get_or_create(store=store, key=item.key, display_name=item.display_name)
        if not scope.is_active:
            paused += 1  # a paused scope receives nothing new; its data is kept
            continue
        cited = [m for m in messages if m.message_id in item.sources] or messages
        observation = Observation(
            scope_id=scope.id,
            agent_id=job.agent_id,
            content=item.content,
            observed_at=max(m.created_at for m in cited),
            created_at=now,
            source_session_id=job.session_id,
            source_message_ids=[m.message_id for m in cited],
            origin="extraction",
            added_by=f"model:{job.id}",
            related_user_ids=item.related_user_ids,
            expires_at=item.expires_at,
        )
        by_scope.setdefault(scope.id, (scope, []))[1].append(observation)
    return by_scope, paused


def _after_commit(
    store: MemoryStore,
    run: JobRun,
    plan: ExtractionPlan,
    by_scope: dict[str, tuple[Scope, list[Observation]]],
    *,
    now: datetime,
    settings: FormationSettings,
) -> None:
    """Counters, the speakers' groups, and the follow-ups (consolidations, a left-over
    request to remember) of a committed formation."""
    job = run.job
    assert job.session_id is not None
    created = sum(len(obs) for _, obs in by_scope.values())
    if created:
        store.agents.adjust_counters(job.agent_id, now=now, observations=created, pending=created)
        activity_record(store=store, agent_id=job.agent_id, now=now, observations=created)
    speaker_groups = {s.user_id: s.groups for s in plan.speakers}
    remembered: set[str] = set()
    for scope, _ in by_scope.values():
        groups = (
            speaker_groups.get(scope.user_id or "") if scope.scope_type == "individual" else None
        )
        if groups:
            store.scopes.remember_groups(ObjectId(scope.id), groups)
            remembered.add(scope.user_id or "")
    # A speaker this formation filed nothing personal about is in these groups all the
    # same: their individual memory, if they have one, remembers them (one indexed find
    # per such speaker; none is created).
    for user_id, groups in speaker_groups.items():
        if groups and user_id not in remembered:
            own = store.scopes.find_by_identity(
                **ScopeKey.individual(job.agent_id, user_id).identity()
            )
            if own is not None:
                store.scopes.remember_groups(ObjectId(own.id), groups)
    for scope, _ in by_scope.values():
        follow_up = consolidation_due(store=store, scope_id=scope.id, trigger="threshold")
        if follow_up is not None:
            run.follow_ups.append(follow_up)
    again = _remember_left_over(store, job.agent_id, job.session_id, settings=settings)
    if again is not None:
        run.follow_ups.append(again)


def _remember_left_over(
    store: MemoryStore, agent_id: str, session_id: str, *, settings: FormationSettings
) -> Job | None:
    """A request to remember that arrived while this formation held the session (its
    ingest could make no job) and after it read its messages: formed next, at once, not
    left below the minimum. The commit released the claim; an ingest racing it either
    committed first (seen here) or claims the session itself."""
    left = store.sessions.unformed(agent_id, session_id, limit=MAX_MESSAGES_PER_FORMATION)
    if not any(m.role == "user" and asks_to_remember(m.content) for m in left):
        return None
    buffer = store.sessions.get_buffer(agent_id, session_id)
    if buffer is None:
        return None
    return _claim_and_create(store, buffer, trigger="remember", now=utcnow(), settings=settings)


class _AlreadyFormed(Exception):
    """Aborts a formation's transaction whose observations an earlier commit stored."""


def formation_client_ids(messages: list[BufferedMessage], count: int) -> list[str]:
    """The batch path's `client_id` of each of a formation's `count` observations: derived
    from the source messages (whichever job or retry forms them) and the item's place."""
    digest = hashlib.sha256(",".join(sorted(m.id for m in messages)).encode()).hexdigest()[:24]
    return [f"formation:{digest}:{n}" for n in range(count)]


def formation_commit(
    *,
    store: MemoryStore,
    job: Job,
    buffer: dict[str, Any],
    messages: list[BufferedMessage],
    by_scope: dict[str, tuple[Scope, list[Observation]]],
    settings: FormationSettings,
    now: datetime,
    duplicates: dict[str, Observation] | None = None,
) -> bool:
    """Store the formation's observations and mark its messages formed, in one transaction,
    through the batch path (`observations_append_once`, keyed by `formation_client_ids`).
    An observation whose text its scope holds already is not stored (`duplicates`).

    False, with nothing written, when an earlier commit of the same messages stored these
    observations already (a retried job whose first commit was acknowledged too late):
    each observation is stored once whatever is retried.
    """
    message_ids = [ObjectId(m.id) for m in messages]
    tokens = sum(m.weighted_tokens for m in messages)
    keys = iter(formation_client_ids(messages, sum(len(o) for _, o in by_scope.values())))
    keyed = {
        scope_id: [(next(keys), o) for o in observations]
        for scope_id, (_, observations) in by_scope.items()
    }

    def commit(session: StoreSession) -> None:
        if duplicates is not None:
            duplicates.clear()
        for scope_id, pairs in keyed.items():
            if observations_append_once(
                store=store,
                scope_id=scope_id,
                keyed=pairs,
                session=session,
                now=now,
                duplicates=duplicates,
            ):
                raise _AlreadyFormed
        if not store.sessions.mark_formed(
            message_ids,
            buffer_id=buffer["_id"],
            tokens=tokens,
            job_id=ObjectId(job.id),
            min_messages=settings.min_messages,
            session=session,
        ):
            raise Conflict("some of these messages were formed by another run")

    try:
        store.in_transaction(commit, attempts=COMMIT_ATTEMPTS)
    except _AlreadyFormed:
        return False
    return True


def _formation_trigger(
    accepted: list[BufferedMessage], buffer: dict[str, Any], settings: FormationSettings
) -> str | None:
    """Why this ingest starts a formation: its thresholds, or a user's explicit request to
    remember (formed at once, below the minimum message count); None: not yet."""
    if _formation_due(buffer, settings):
        return "threshold"
    if any(m.role == "user" and asks_to_remember(m.content) for m in accepted):
        return "remember"
    return None


def _formation_due(buffer: dict[str, Any], settings: FormationSettings) -> bool:
    count = buffer["unformed_count"]
    if count < settings.min_messages:
        return False
    return count >= settings.max_messages or buffer["unformed_tokens"] >= settings.max_tokens


def _claim_and_create(
    store: MemoryStore,
    buffer: dict[str, Any],
    *,
    trigger: str,
    now: datetime,
    settings: FormationSettings,
    session: StoreSession | None = None,
) -> Job | None:
    """Claim the session for one formation and create its job; None if another run holds it
    (a claim lapses `lease_seconds` after its last renewal: a dead worker's is taken over)."""
    job_oid = ObjectId()
    claimed = store.sessions.claim_formation(
        buffer["_id"],
        job_id=job_oid,
        now=now,
        stale_before=now - timedelta(seconds=settings.lease_seconds),
        session=session,
    )
    if not claimed:
        return None
    return job_create(
        store=store,
        kind="formation",
        agent_id=buffer["agent_id"],
        session_id=buffer["session_id"],
        trigger=trigger,
        job_id=str(job_oid),
        session=session,
    )


def _first_of_each_id(messages: list[IncomingMessage]) -> list[IncomingMessage]:
    """A message id repeated within one request counts once (the rest are duplicates)."""
    seen: set[str] = set()
    unique = []
    for message in messages:
        if message.id not in seen:
            seen.add(message.id)
            unique.append(message)
    return unique
