"""Undoing a review decision, for a while (`MemoryStore.review_undo_seconds`, the setting
`MEMORY_REVIEW_UNDO_SECONDS`), and the list of decided items that the Review page and
`GET /agents/{id}/review/decided` show.

An undo puts the observation back where the decision found it (`in_review` or
`candidate`, its reasons and supporters kept) and takes back what the decision did: a
rejection only changed the status; an approval also joined the scope's pending list, the
agent's pending counter and the search index, so the undo leaves them again, with the
same writes a delete makes. It is a conditional update on the state the decision left
(status, `decided_at`, unconsolidated, not deleted), so of two undos, or an undo and a
consolidation that absorbed the approved item, exactly one wins; the loser is a 409.

What cannot be undone this way answers 409 `undo_unavailable` with the reason: an
approval that was already consolidated (its text is in the memory now: delete it), an
approval with an edited text (the text it waited with is not kept: reject or edit it),
and an approved held edit (it changed another observation: edit that one again).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.core.documents import Observation, ReviewStatus, utcnow
from streams.core.exceptions import Conflict, InvalidInput
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.guard.review import DECIDABLE, Decided
from streams.memory.rebuild import prune_search_terms
from streams.search.index import search_index_remove
from streams.store import MemoryStore, StoreSession

# The keys a decision adds to `review` (`streams.guard.review._decide_one`); an undo
# removes them and keeps the rest (reasons, since, supporting groups).
DECISION_KEYS = ("decision", "decided_by", "decided_at", "note", "status_before", "edited")
# Cursors hold integers: a decision's time as milliseconds since this (the store's precision).
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class UndoExpired(Conflict):
    """The decision is older than the undo window."""

    code = "undo_expired"


class UndoUnavailable(Conflict):
    """The decision cannot be undone (not decided, consolidated since, edited...)."""

    code = "undo_unavailable"


@dataclass(frozen=True)
class DecidedItem:
    """A decided observation, and until when its decision can be undone (None: not)."""

    observation: Observation
    undo_until: datetime | None


def undo_deadline(*, store: MemoryStore, observation: Observation) -> datetime | None:
    """Until when the decision on `observation` can be undone; None when it cannot be."""
    review = observation.review or {}
    decided_at = review.get("decided_at")
    if not isinstance(decided_at, datetime) or observation.deleted:
        return None
    if review.get("decision") == "approve" and (
        observation.consolidated or review.get("edit_of") or _edited(observation)
    ):
        return None
    return decided_at + timedelta(seconds=store.review_undo_seconds)


def review_decided(
    *,
    store: MemoryStore,
    agent_ids: list[str],
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[DecidedItem]:
    """Decided observations of these agents, newest decision first (paginated)."""
    page_size = clamp_limit(limit)
    before = None
    if cursor:
        value = decode_cursor(cursor, required_keys=("at_ms", "id"))
        if value:
            try:
                at = EPOCH + timedelta(milliseconds=int(value["at_ms"]))
            except (OverflowError, ValueError) as exc:
                raise InvalidInput("malformed cursor", details=[{"field": "cursor"}]) from exc
            before = (at, ObjectId(str(value["id"])))
    if not agent_ids:
        return Page(items=[], next_cursor=None)
    found = store.observations.decided_page(agent_ids=agent_ids, before=before, limit=page_size + 1)
    more = len(found) > page_size
    found = found[:page_size]
    now = utcnow()
    items = []
    for o in found:
        until = undo_deadline(store=store, observation=o)
        items.append(
            DecidedItem(observation=o, undo_until=until if until and until > now else None)
        )
    next_cursor = None
    if more and found:
        last = found[-1]
        at_ms = ((last.review or {})["decided_at"] - EPOCH) // timedelta(milliseconds=1)
        next_cursor = encode_cursor({"at_ms": at_ms, "id": last.id})
    return Page(items=items, next_cursor=next_cursor)


def review_undo(
    *, store: MemoryStore, observation: Observation, actor: str, session: StoreSession
) -> Decided:
    """In the caller's transaction: take the decision on `observation` back."""
    review = dict(observation.review or {})
    decided_at = review.get("decided_at")
    decision = review.get("decision")
    if not isinstance(decided_at, datetime) or decision not in ("approve", "reject"):
        raise UndoUnavailable("the observation has no review decision to undo")
    until = undo_deadline(store=store, observation=observation)
    if until is None:
        raise UndoUnavailable(_why_not(observation))
    now = utcnow()
    if now > until:
        raise UndoExpired(
            f"the decision can be undone for {store.review_undo_seconds} seconds; "
            f"that time ended at {until.isoformat()}"
        )
    before = review.get("status_before")
    back_to: ReviewStatus = before if before in DECIDABLE else "in_review"
    restored: dict[str, Any] = {k: v for k, v in review.items() if k not in DECISION_KEYS}
    restored["undone"] = {"decision": decision, "by": actor, "at": now}
    current = None if decision == "approve" else "rejected"
    oid = ObjectId(observation.id)
    if not store.observations.undo_decision(
        oid,
        current=current,
        decided_at=decided_at,
        fields={"review_status": back_to, "review": restored},
        session=session,
    ):
        raise UndoUnavailable("the observation changed since the decision (decided or absorbed)")
    if decision == "approve":
        _leave_memory(store=store, observation=observation, session=session, now=now)
    summary = {
        "scope_id": observation.scope_id,
        "decision": decision,
        "from": observation.status,
        "to": back_to,
        "decided_at": decided_at.isoformat(),
        "decided_by": review.get("decided_by"),
    }
    undone = replace(observation, review_status=back_to, review=restored)
    return Decided(observation=undone, action="observation.review_undo", summary=summary)


def _leave_memory(
    *, store: MemoryStore, observation: Observation, session: StoreSession, now: datetime
) -> None:
    """What an approval did, taken back: the pending list, the counter, the search index."""
    scope_oid = ObjectId(observation.scope_id)
    search_index_remove(store=store, observations=[observation], session=session)
    prune_search_terms(
        store=store, scope_id=observation.scope_id, texts=[observation.content], session=session
    )
    was_pending = store.scopes.pull_pending(scope_oid, [ObjectId(observation.id)], session=session)
    if was_pending:
        store.agents.adjust_counters(observation.agent_id, now=now, pending=-1, session=session)


def _edited(observation: Observation) -> bool:
    return bool((observation.review or {}).get("edited"))


def _why_not(observation: Observation) -> str:
    review = observation.review or {}
    if observation.deleted:
        return "the observation was deleted"
    if observation.consolidated:
        return "the approved observation is consolidated already: delete it instead"
    if review.get("edit_of"):
        return "the approved edit changed another observation: edit that one again"
    if _edited(observation):
        return "it was approved with an edited text: reject it or edit it instead"
    return "the decision cannot be undone"
