"""The range of times the memory can hold: what an ObjectId's seconds cover.

Every time query is an `_id` window (ids carry their creation second), so a time
outside these bounds has no id to compare with; it is refused at the edge (a 422)
instead of overflowing in a query (a 500) or being silently clamped."""

from __future__ import annotations

from datetime import UTC, datetime

FIRST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LAST_TIME = datetime(2106, 2, 7, 6, 28, 15, tzinfo=UTC)  # 2**32 - 1 seconds
RANGE_TEXT = "1970-01-01T00:00:00Z to 2106-02-07T06:28:15Z"


def in_range(value: datetime) -> bool:
    """True for an aware time inside the supported range (bounds included)."""
    return FIRST_TIME <= value <= LAST_TIME
