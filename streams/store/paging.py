"""Pages over a per-parent sequence number, with filters bounded by a window.

`limit` does not stop a scan on the embedded store: a query costs what its
filter matches. So a page never asks for "everything below the cursor"; it asks
for a window of sequence numbers below it, widening the window while the page
is short, and stops after a few windows with a cursor where it stopped. Every
query is an equality on the parent plus a bounded range on `seq`, cheap on both
the embedded store and mongod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo import DESCENDING
from pymongo.collection import Collection

FIRST_WINDOW_FACTOR = 4
MAX_WINDOWS = 6
MAX_WINDOW = 20_000


@dataclass(frozen=True)
class SeqPage:
    docs: list[dict[str, Any]]
    next_before: int | None  # pass back as `before` for the next page; None at the end


def page_by_seq(
    collection: Collection,
    *,
    base_filter: dict[str, Any],
    top_seq: int,
    before: int | None,
    limit: int,
    projection: dict[str, Any] | None = None,
) -> SeqPage:
    """Newest first: documents with `seq < before` (or `<= top_seq`) matching `base_filter`."""
    high = min(top_seq, before - 1) if before is not None else top_seq
    window = max(limit * FIRST_WINDOW_FACTOR, 20)
    docs: list[dict[str, Any]] = []
    for _ in range(MAX_WINDOWS):
        if high <= 0:
            return SeqPage(docs=docs, next_before=None)
        low = max(0, high - window)
        query = {**base_filter, "seq": {"$gt": low, "$lte": high}}
        found = list(
            collection.find(query, projection).sort("seq", DESCENDING).limit(limit - len(docs))
        )
        docs += found
        if len(docs) >= limit:
            last_seq = docs[-1]["seq"]
            return SeqPage(docs=docs, next_before=last_seq if last_seq > 1 else None)
        high = low
        window = min(window * 4, MAX_WINDOW)
    return SeqPage(docs=docs, next_before=high + 1 if high > 0 else None)


def page_by_seq_ascending(
    collection: Collection,
    *,
    base_filter: dict[str, Any],
    top_seq: int,
    after: int | None,
    limit: int,
    projection: dict[str, Any] | None = None,
) -> SeqPage:
    """Oldest first: documents with `seq > after` matching `base_filter`, by windows upwards.

    The cursor it returns (`next_before`) is the last seq read: pass it back as `after`.
    """
    low = after or 0
    window = max(limit * FIRST_WINDOW_FACTOR, 20)
    docs: list[dict[str, Any]] = []
    for _ in range(MAX_WINDOWS):
        if low >= top_seq:
            return SeqPage(docs=docs, next_before=None)
        high = min(top_seq, low + window)
        query = {**base_filter, "seq": {"$gt": low, "$lte": high}}
        found = list(collection.find(query, projection).sort("seq", 1).limit(limit - len(docs)))
        docs += found
        if len(docs) >= limit:
            last_seq = docs[-1]["seq"]
            return SeqPage(docs=docs, next_before=last_seq if last_seq < top_seq else None)
        low = high
        window = min(window * 4, MAX_WINDOW)
    return SeqPage(docs=docs, next_before=low if low < top_seq else None)
