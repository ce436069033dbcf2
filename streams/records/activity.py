"""Daily activity per agent: the counters behind the dashboard's chart."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

MAX_DAYS = 366


@dataclass(frozen=True)
class ActivityDay:
    day: date
    observations: int
    consolidations: int


def activity_record(
    *,
    store: MemoryStore,
    agent_id: str,
    now: datetime,
    observations: int = 0,
    consolidations: int = 0,
    session: StoreSession | None = None,
    writes: WriteBatch | None = None,
    sharded: bool = False,
) -> None:
    """Count what was just committed on its UTC day. Long transactions (formation) call it
    after their commit, so a hot day document never makes them conflict; a short add
    passes its `session` and counts inside its own transaction (one fsync, not two), on a
    shard (`sharded`) so that concurrent adds do not conflict."""
    counts = {
        key: value
        for key, value in (("observations", observations), ("consolidations", consolidations))
        if value
    }
    if counts:
        store.agent_days.increment(
            agent_id, now.date(), counts, session=session, writes=writes, sharded=sharded
        )


def activity_days(*, store: MemoryStore, agent_id: str, last: date, days: int) -> list[ActivityDay]:
    """Every day of `[last - days + 1, last]`, oldest first, zero where nothing happened."""
    days = max(1, min(days, MAX_DAYS))
    first = last - timedelta(days=days - 1)
    found = {doc["day"]: doc for doc in store.agent_days.between(agent_id, first=first, last=last)}
    result = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        doc = found.get(day.isoformat(), {})
        result.append(
            ActivityDay(
                day=day,
                observations=int(doc.get("observations", 0)),
                consolidations=int(doc.get("consolidations", 0)),
            )
        )
    return result
