"""Review of shared memory: the queue, decisions, and releasing what waited.

An observation held by the guard (`streams.guard.screening`) or by propagation waits as
`in_review` (a person decides) or `candidate` (a group's collective copy waiting for more
groups). It is in no context, search, consolidation, propagation or pending count until
it is released: approve (optionally with an edited text) makes it `pending`, joins the
scope's pending list and the search index, and checks the threshold; reject makes it
`rejected` (kept for the audit, used nowhere; forget-user purges it like any other).

Every decision is a conditional update on the status (`set_review_status`): of two
people deciding one item at once, one wins and the other gets a Conflict; nothing is
decided twice. The decision, its audit entry, the pending list and the search postings
commit in one transaction; the consolidation job it may make due is created after.

Long because: the queue, single and bulk decisions and the release are one state
machine over the conditional status update and the threshold step they share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents import Job, Observation, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.guard.screening import screen_text
from streams.jobs import job_create
from streams.records.audit import content_digest
from streams.search.index import search_index_add
from streams.store import MemoryStore, StoreSession

Decision = Literal["approve", "reject"]
QueueStatus = Literal["in_review", "candidate"]
DECIDABLE = ("in_review", "candidate")
MAX_BULK = 500
MAX_NOTE_CHARS = 2000
# An edited text is held to an extracted observation's limit.
EDIT_MAX_WORDS = 50
MAX_CONTENT_CHARS = 4000
_NON_WORD = re.compile(r"[^\w]+")
REASON_PREFIXES = ("propagated", "flag:", "needs_more_groups", "api", "review_mode")


class NotInReview(Conflict):
    """The observation is not waiting for a decision (any more)."""

    code = "not_in_review"


@dataclass(frozen=True)
class Decided:
    """One decision made: the observation as decided, and what its audit entry says
    (the review action records it, one entry per observation, in the same transaction)."""

    observation: Observation
    action: str
    summary: dict[str, Any]


@dataclass(frozen=True)
class BulkResult:
    approved: int
    rejected: int
    skipped: list[str]


# -- reads -------------------------------------------------------------------------------


def review_queue(
    *,
    store: MemoryStore,
    agent_id: str | list[str],
    status: QueueStatus = "in_review",
    scope_id: str | None = None,
    reason: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[Observation]:
    """What waits, oldest first; `reason` keeps items with that reason (e.g. `flag:secret`);
    a list of agents is the "all agents" queue."""
    if status not in DECIDABLE:
        raise InvalidInput("status must be in_review or candidate", details=[{"field": "status"}])
    if reason is not None and (len(reason) > 100 or not reason.startswith(REASON_PREFIXES)):
        raise InvalidInput(f"unknown review reason {reason!r}", details=[{"field": "reason"}])
    page_size = clamp_limit(limit)
    after = _cursor_id(cursor)
    scope_oid = require_object_id(scope_id, what="scope") if scope_id else None
    items = store.observations.review_page(
        agent_id=agent_id,
        status=status,
        scope_id=scope_oid,
        reason=reason,
        after=after,
        limit=page_size + 1,
    )
    more = len(items) > page_size
    items = items[:page_size]
    next_cursor = encode_cursor({"after": items[-1].id}) if more and items else None
    return Page(items=items, next_cursor=next_cursor)


def review_counts(
    *, store: MemoryStore, agent_id: str | None = None, scope_id: str | None = None
) -> dict[str, int]:
    """How many wait, per status, for an agent or one scope."""
    oid = require_object_id(scope_id, what="scope") if scope_id else None
    return store.observations.review_counts(
        statuses=list(DECIDABLE), agent_id=agent_id, scope_id=oid
    )


def review_counts_for_agents(*, store: MemoryStore, agent_ids: list[str]) -> dict[str, int]:
    """How many wait, per status, summed over these agents ("all agents")."""
    return {
        status: sum(store.observations.review_counts_by_agent(agent_ids, status=status).values())
        for status in DECIDABLE
    }


def review_counts_by_agent(*, store: MemoryStore, agent_ids: list[str]) -> dict[str, int]:
    """How many wait for a person, per agent (the dashboard's column)."""
    return store.observations.review_counts_by_agent(agent_ids, status="in_review")


def _cursor_id(cursor: str | None) -> ObjectId | None:
    if not cursor:
        return None
    value = decode_cursor(cursor, required_keys=("after",))
    return ObjectId(str(value["after"])) if value else None


def normalized_text(text: str) -> str:
    """The text as compared for "the same fact": case, spacing and punctuation ignored."""
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


# -- releasing ---------------------------------------------------------------------------


def observation_release(
    *,
    store: MemoryStore,
    observation: Observation,
    expected: str,
    session: StoreSession,
    now: datetime,
    review: dict[str, Any],
    content: str | None = None,
) -> Observation | None:
    """Within the caller's transaction: make a held observation pending (its scope's
    pending list, the search index, the agent's pending counter). None when it was not
    `expected` any more (another decision won)."""
    fields: dict[str, Any] = {"review_status": None, "review": review}
    released = replace(observation, review_status=None, review=review)
    if content is not None and content != observation.content:
        stored, detection = screen_text(content)
        fields.update(
            content=stored,
            flags=list(detection.flags),
            flag_spans=[s.to_dict() for s in detection.spans],
            embedding=None,
            embedding_model=None,
            embedding_stale=True,
        )
        released = replace(
            released,
            content=stored,
            flags=fields["flags"],
            flag_spans=fields["flag_spans"],
        )
    oid = ObjectId(observation.id)
    if not store.observations.set_review_status(
        oid,
        expected=expected,
        fields=fields,
        scope_id=ObjectId(observation.scope_id),
        session=session,
    ):
        return None
    if not observation.consolidated:
        store.scopes.push_pending(ObjectId(observation.scope_id), [oid], session=session)
        store.agents.adjust_counters(observation.agent_id, now=now, pending=1, session=session)
    search_index_add(store=store, observations=[released], session=session)
    return released


# -- decisions ---------------------------------------------------------------------------


def review_decide(
    *,
    store: MemoryStore,
    observation: Observation,
    decision: str,
    actor: str,
    content: str | None = None,
    note: str | None = None,
    follow_ups: list[Job] | None = None,
    session: StoreSession | None = None,
    decided: list[Decided] | None = None,
) -> Observation:
    """Approve or reject one waiting observation. With `session`, in the caller's
    transaction (the review action's, which records `decided` in it); the consolidation
    it makes due is written there too, and goes to `follow_ups`."""
    decision, content, note = _checked(decision, content, note)
    if observation.review_status not in DECIDABLE or observation.deleted:
        raise NotInReview("the observation is not waiting for review")
    now = utcnow()
    jobs: list[Job] = []

    made: list[Decided] = []

    def decide(session: StoreSession) -> None:
        made.clear()
        jobs.clear()
        one = _decide_one(
            store=store,
            observation=observation,
            decision=decision,
            actor=actor,
            content=content,
            note=note,
            now=now,
            session=session,
        )
        if one is None:
            raise NotInReview("the observation is not waiting for review (decided already)")
        made.append(one)
        if decision == "approve":
            jobs.extend(_threshold(store=store, scope_ids=[observation.scope_id], session=session))

    if session is not None:
        decide(session)
    else:
        store.in_transaction(decide)
    if follow_ups is not None:
        follow_ups.extend(jobs)
    if decided is not None:
        decided.extend(made)
    return made[0].observation


def review_decide_bulk(
    *,
    store: MemoryStore,
    agent_id: str,
    ids: list[str],
    decision: str,
    actor: str,
    note: str | None = None,
    follow_ups: list[Job] | None = None,
    agent_ids: frozenset[str] | None = None,
    session: StoreSession | None = None,
    decided: list[Decided] | None = None,
) -> BulkResult:
    """Decide many at once (up to `MAX_BULK`): unknown ids, other agents' and those not
    waiting are `skipped`; the rest apply in one transaction (with `session`, the
    caller's, which records each of `decided` in it)."""
    decision, _, note = _checked(decision, None, note)
    wanted, skipped = _parsed_ids(ids)
    found = {o.id: o for o in store.observations.get_many(list(wanted.values()))}
    waiting = [o for o in map(found.get, wanted) if o and _decidable(o, agent_id, agent_ids)]
    now = utcnow()
    applied: list[Decided] = []
    jobs: list[Job] = []

    def decide(session: StoreSession) -> None:
        applied.clear()
        jobs.clear()
        for observation in waiting:
            one = _decide_one(
                store=store,
                observation=observation,
                decision=decision,
                actor=actor,
                content=None,
                note=note,
                now=now,
                session=session,
            )
            if one is not None:
                applied.append(one)
        if decision == "approve":
            scope_ids = sorted({d.observation.scope_id for d in applied})
            jobs.extend(_threshold(store=store, scope_ids=scope_ids, session=session))

    if session is not None:
        decide(session)
    else:
        store.in_transaction(decide)
    if follow_ups is not None:
        follow_ups.extend(jobs)
    if decided is not None:
        decided.extend(applied)
    done = {d.observation.id for d in applied}
    skipped += [raw for raw in wanted if raw not in done]
    count = len(applied)
    return BulkResult(
        approved=count if decision == "approve" else 0,
        rejected=count if decision == "reject" else 0,
        skipped=skipped,
    )


def _parsed_ids(ids: list[str]) -> tuple[dict[str, ObjectId], list[str]]:
    """The ids, once each: the well-formed ones by their ObjectId, and the rest (skipped).
    InvalidInput for none or more than MAX_BULK."""
    if not ids:
        raise InvalidInput("ids must not be empty", details=[{"field": "ids"}])
    if len(ids) > MAX_BULK:
        raise InvalidInput(f"at most {MAX_BULK} ids at once", details=[{"field": "ids"}])
    wanted: dict[str, ObjectId] = {}
    skipped: list[str] = []
    for raw in dict.fromkeys(ids):
        if isinstance(raw, str) and ObjectId.is_valid(raw) and len(raw) == 24:
            wanted[raw] = ObjectId(raw)
        else:
            skipped.append(raw)
    return wanted, skipped


def _decidable(observation: Observation, agent_id: str, agent_ids: frozenset[str] | None) -> bool:
    """Whether a bulk decision may decide it: this agent's (and the caller's), waiting."""
    return not (
        observation.agent_id != agent_id
        or (agent_ids is not None and observation.agent_id not in agent_ids)
        or observation.review_status not in DECIDABLE
        or observation.deleted
    )


def _decide_one(
    *,
    store: MemoryStore,
    observation: Observation,
    decision: str,
    actor: str,
    content: str | None,
    note: str | None,
    now: datetime,
    session: StoreSession,
) -> Decided | None:
    expected = str(observation.review_status)
    review = {
        **(observation.review or {}),
        "decision": decision,
        "decided_by": actor,
        "decided_at": now,
        "note": note,
        "status_before": expected,
    }
    if decision == "approve" and content is not None and content != observation.content:
        review["edited"] = True  # the held text is not kept: the undo refuses (review_undo)
    oid = ObjectId(observation.id)
    edit_of = (observation.review or {}).get("edit_of")
    decided: Observation | None
    delete_of = (observation.review or {}).get("delete_of")  # a user's forget request
    if decision == "approve" and (edit_of or delete_of):
        decided = _apply_held_change(store, observation, expected, review, content, now, session)
    elif decision == "approve":
        decided = observation_release(
            store=store,
            observation=observation,
            expected=expected,
            session=session,
            now=now,
            review=review,
            content=content,
        )
    elif store.observations.set_review_status(
        oid,
        expected=expected,
        fields={"review_status": "rejected", "review": review},
        session=session,
    ):
        decided = replace(observation, review_status="rejected", review=review)
    else:
        decided = None
    if decided is None:
        return None
    summary = _decision_summary(observation, decided, expected, note)
    return Decided(observation=decided, action=f"observation.review_{decision}", summary=summary)


def _apply_held_change(
    store: MemoryStore,
    observation: Observation,
    expected: str,
    review: dict[str, Any],
    content: str | None,
    now: datetime,
    session: StoreSession,
) -> Observation | None:
    """Approve a held edit of another observation (or a user's forget request): the
    review action applies its text there, in this transaction; the held copy itself
    leaves. None when another decision won."""
    text = observation.content if content is None else screen_text(content)[0]
    oid = ObjectId(observation.id)
    if not store.observations.set_review_status(
        oid,
        expected=expected,
        fields={"review_status": "rejected", "review": review},
        session=session,
    ):
        return None
    scope_oid = ObjectId(observation.scope_id)
    store.observations.mark_deleted(oid, scope_id=scope_oid, now=now, session=session)
    store.scopes.count_deleted(scope_oid, session=session)
    return replace(observation, content=text, review=review, review_status=None)


def _decision_summary(
    observation: Observation, decided: Observation, expected: str, note: str | None
) -> dict[str, Any]:
    """The audit entry's summary: the move, the reasons, and what the text became."""
    held = observation.review or {}
    summary: dict[str, Any] = {
        "scope_id": observation.scope_id,
        "from": expected,
        "to": decided.status,
        "reasons": list(held.get("reasons") or []),
        "note": note,
    }
    if held.get("edit_of"):
        summary["edit_of"] = held["edit_of"]
    if held.get("delete_of"):
        summary["delete_of"] = list(held["delete_of"])
    if decided.content != observation.content:
        summary["content"] = {
            "before": content_digest(observation.content),
            "after": content_digest(decided.content),
        }
    return summary


def _checked(
    decision: str, content: str | None, note: str | None
) -> tuple[Decision, str | None, str | None]:
    if decision not in ("approve", "reject"):
        raise InvalidInput("decision must be approve or reject", details=[{"field": "decision"}])
    if note is not None:
        note = note.strip() or None
        if note is not None and len(note) > MAX_NOTE_CHARS:
            raise InvalidInput(
                f"note is longer than {MAX_NOTE_CHARS} characters", details=[{"field": "note"}]
            )
    if content is not None:
        if decision != "approve":
            raise InvalidInput("only an approval takes content", details=[{"field": "content"}])
        content = " ".join(content.split())
        if not content:
            raise InvalidInput("content must not be empty", details=[{"field": "content"}])
        if len(content) > MAX_CONTENT_CHARS or len(content.split()) > EDIT_MAX_WORDS:
            raise InvalidInput(
                f"content is longer than {EDIT_MAX_WORDS} words", details=[{"field": "content"}]
            )
    return decision, content, note  # type: ignore[return-value]


def _threshold(*, store: MemoryStore, scope_ids: list[str], session: StoreSession) -> list[Job]:
    """Inside the decision's transaction: the consolidation jobs its approvals make due.
    Created with the decision, so a crash before they are dispatched leaves them queued
    (the recovery sweep sends them), never a decision whose follow-up is lost."""
    jobs = []
    for scope_id in scope_ids:
        scope = store.scopes.get(ObjectId(scope_id), session=session)
        if scope is None or not scope.is_active:
            continue
        if scope.pending_count < scope.consolidation_threshold:
            continue
        if store.jobs.active_for_scope(ObjectId(scope_id), "consolidation") is not None:
            continue
        jobs.append(
            job_create(
                store=store,
                kind="consolidation",
                agent_id=scope.agent_id,
                scope_id=scope_id,
                trigger="review",
                session=session,
            )
        )
    return jobs


def scope_of(*, store: MemoryStore, observation: Observation) -> Scope:
    scope = store.scopes.get(ObjectId(observation.scope_id))
    if scope is None:
        raise NotFound("scope not found")
    return scope
