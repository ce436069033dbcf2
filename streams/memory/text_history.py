"""An observation's text history: the earlier texts its content edits replaced."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId

from streams.core.documents import Observation
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.store import MemoryStore


@dataclass(frozen=True)
class EarlierText:
    content: str  # the text before the edit made at `replaced_at`
    actor: str | None  # who made that edit
    replaced_at: datetime


def observation_history(
    *,
    store: MemoryStore,
    observation: Observation,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[EarlierText]:
    """The texts an observation held before each content edit, newest first (empty for a
    deleted one: its history is purged with it)."""
    size = clamp_limit(limit)
    position = decode_cursor(cursor, required_keys=("before",))
    before = ObjectId(position["before"]) if position else None
    docs = store.text_history.page(
        require_object_id(observation.id, what="observation"), before=before, limit=size
    )
    more = len(docs) > size
    docs = docs[:size]
    items = [EarlierText(d["content"], d.get("actor"), d["at"]) for d in docs]
    next_cursor = encode_cursor({"before": str(docs[-1]["_id"])}) if more and docs else None
    return Page(items=items, next_cursor=next_cursor)
