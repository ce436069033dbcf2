"""One visibility rule for every surface that shows memory text (issue 37, "one way out").

An observation's words are shown only while it is visible. Removed means the same on
every surface (API, UI pages and partials, exports, webhooks, the context log, the
chat-call records): deleted, expired, or private to someone other than the viewer.
Held items (in review, candidates, rejected) are not memory either, but the review
queue shows them to staff; memory surfaces (context, search) leave them out.

`memory_removal` is the one rule: why an observation may not be shown, for a memory
surface (context, search, the chat proxy: held items are out, and private ones out of
every shared section) or for a staff surface (`removal`, `shown`: API answers, UI pages,
exports, webhooks; they list held items in the review queue). A forgotten user's
observations are gone from the store, not marked: what a surface cannot find it cannot
show; a surface that knows of a tombstone the store has not caught up with (`forgotten`)
leaves out what names them. The removal's "who" is `deleted_by` (the action's actor,
stored with the deletion; None for deletions before it was recorded).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

from streams.core.documents import Observation, utcnow

Removed = Literal["deleted", "expired", "private"]
MemoryRemoved = Literal["deleted", "expired", "private", "held", "forgotten"]


@dataclass(frozen=True)
class Shown:
    """What a surface may show of one observation: its text, or why and when it went."""

    id: str
    scope_id: str
    text: str | None  # None: removed, show the reason instead
    removed: Removed | None
    removed_at: datetime | None
    removed_by: str | None


def memory_removal(
    observation: Observation,
    *,
    now: datetime | None = None,
    viewer_user_id: str | None = None,
    shared_section: bool = False,
    forgotten: frozenset[str] = frozenset(),
    staff: bool = False,
) -> MemoryRemoved | None:
    """Why the observation's words may not be shown, or None: deleted, expired, private
    to others (`viewer_user_id` not among the users it is about, or shown in a shared
    section), forgotten (it names a user of `forgotten`) and, but for `staff` surfaces,
    held (in review, a candidate, rejected)."""
    if observation.deleted:
        return "deleted"
    if observation.is_expired(now):
        return "expired"
    if observation.private and (
        shared_section
        or (viewer_user_id is not None and viewer_user_id not in observation.related_user_ids)
    ):
        return "private"
    if forgotten and forgotten & set(observation.related_user_ids):
        return "forgotten"
    if observation.held and not staff:
        return "held"
    return None


def removal(
    observation: Observation, *, now: datetime | None = None, viewer_user_id: str | None = None
) -> Removed | None:
    """Why a staff surface may not show the observation's words, or None (the rule of
    `memory_removal` for staff: held items listed, private ones marked private).

    `viewer_user_id`: the end user a memory surface answers (context, chat); a private
    observation is removed for everyone but the users it is about. Staff surfaces pass
    None and see private items, marked private.
    """
    reason = memory_removal(observation, now=now, viewer_user_id=viewer_user_id, staff=True)
    return None if reason is None else cast(Removed, reason)  # held/forgotten: not for staff


def shown(
    observation: Observation, *, now: datetime | None = None, viewer_user_id: str | None = None
) -> Shown:
    """The observation as a surface may show it (the one rule; surfaces render this)."""
    reason = removal(observation, now=now or utcnow(), viewer_user_id=viewer_user_id)
    removed_at = None
    if reason == "deleted":
        removed_at = observation.deleted_at
    elif reason == "expired":
        removed_at = observation.expires_at
    return Shown(
        id=observation.id,
        scope_id=observation.scope_id,
        text=None if reason else observation.content,
        removed=reason,
        removed_at=removed_at,
        removed_by=observation.deleted_by if reason == "deleted" else None,
    )


def shown_text(observation: Observation, *, now: datetime | None = None) -> str | None:
    """The words a staff surface may print, or None when the observation was removed."""
    return None if removal(observation, now=now) else observation.content
