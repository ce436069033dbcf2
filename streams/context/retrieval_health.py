"""Retrieval health per agent and day, from the context log, and seed 004 Appendix B's
signals for when vector search would pay.

Per day: calls, calls where retrieval fired, fired with no hit, the search's p95 in
ms, the reasons that fired most often with no hit, and the largest scopes the calls
read. The agent is flagged when, over the window, any signal holds:
retrieval fires with nothing found (at least `NO_HIT_SHARE` of fired calls), search
is slow (p95 above `SLOW_SEARCH_MS`), or a scope holds more than
`LARGE_SCOPE_OBSERVATIONS` observations. Signals on rates wait for `MIN_FIRED` fired
calls, so one odd call does not flag an agent.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta
from typing import Any

from streams.core.documents import utcnow
from streams.store import MemoryStore

NO_HIT_SHARE = 0.3
SLOW_SEARCH_MS = 100.0
LARGE_SCOPE_OBSERVATIONS = 1_000
MIN_FIRED = 20
TOP_PHRASES = 5
TOP_SCOPES = 3


def retrieval_health(
    *, store: MemoryStore, agent_id: str, days: int = 7, now: datetime | None = None
) -> dict[str, Any]:
    """The agent's last `days` days (today included), oldest first, and the signals."""
    now = now or utcnow()
    first_day = now.date() - timedelta(days=days - 1)
    since = datetime.combine(first_day, datetime.min.time(), tzinfo=now.tzinfo)
    calls = store.context_calls.since(agent_id=agent_id, since=since)
    by_day: dict[date, list[dict[str, Any]]] = {
        first_day + timedelta(days=n): [] for n in range(days)
    }
    for call in calls:
        day = call["created_at"].date()
        if day in by_day:
            by_day[day].append(call)
    rows = [_day(day, found) for day, found in by_day.items()]
    fired = [c for c in calls if (c.get("retrieval") or {}).get("triggered")]
    no_hit = [c for c in fired if not c.get("retrieved_ids")]
    p95 = _p95([c["search_ms"] for c in fired if c.get("search_ms") is not None])
    largest = _largest(calls)
    enough = len(fired) >= MIN_FIRED
    no_hit_share = len(no_hit) / len(fired) if fired else 0.0
    biggest = largest[0]["observations"] if largest else 0
    signals: list[dict[str, Any]] = [
        {
            "name": "fires_with_nothing_found",
            "value": round(no_hit_share, 3),
            "threshold": NO_HIT_SHARE,
            "met": enough and no_hit_share >= NO_HIT_SHARE,
        },
        {
            "name": "search_p95_ms",
            "value": p95,
            "threshold": SLOW_SEARCH_MS,
            "met": enough and p95 is not None and p95 > SLOW_SEARCH_MS,
        },
        {
            "name": "observations_per_scope",
            "value": biggest,
            "threshold": LARGE_SCOPE_OBSERVATIONS,
            "met": biggest > LARGE_SCOPE_OBSERVATIONS,
        },
    ]
    return {
        "agent_id": agent_id,
        "days": rows,
        "calls": len(calls),
        "fired": len(fired),
        "fired_no_hit": len(no_hit),
        "p95_ms": p95,
        "largest_scopes": largest,
        "signals": signals,
        "vector_search_would_pay": any(s["met"] for s in signals),
        "log_days": store.context_log_days,
    }


def _day(day: date, calls: list[dict[str, Any]]) -> dict[str, Any]:
    fired = [c for c in calls if (c.get("retrieval") or {}).get("triggered")]
    no_hit = [c for c in fired if not c.get("retrieved_ids")]
    phrases = Counter((c.get("retrieval") or {}).get("reason", "") for c in no_hit)
    return {
        "day": day,
        "calls": len(calls),
        "fired": len(fired),
        "fired_no_hit": len(no_hit),
        "p95_ms": _p95([c["search_ms"] for c in fired if c.get("search_ms") is not None]),
        "no_hit_phrases": [
            {"phrase": phrase, "count": count} for phrase, count in phrases.most_common(TOP_PHRASES)
        ],
        "largest_scopes": _largest(calls),
    }


def _p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)


def _largest(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The largest scopes the calls read (each at the size last seen), biggest first."""
    sizes: dict[str, dict[str, Any]] = {}
    for call in reversed(calls):  # oldest first: the newest size wins
        for scope in call.get("scopes") or []:
            sizes[scope["id"]] = {
                "scope_id": scope["id"],
                "scope_type": scope.get("type", ""),
                "observations": int(scope.get("observations") or 0),
            }
    return sorted(sizes.values(), key=lambda s: -s["observations"])[:TOP_SCOPES]
