"""Bulk actions by filter: delete, mark private, or move to another scope of the same agent.

A filter names observations of one agent by scope, session, speaker, text, dates and
status (at least one of them). `bulk_match` finds them through declared indexes (see
`streams.store.bulk`) and stops at one more than the limit (`MEMORY_BULK_MAX`): a dry run
answers the count and a sample, a real run freezes the matched list into a `bulk` job,
which `streams.memory.bulk_job` applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.ids import parse_object_id
from streams.store import MemoryStore
from streams.store.bulk import BulkRepository

BulkAction = Literal["delete", "private", "move"]
BULK_ACTIONS: tuple[BulkAction, ...] = ("delete", "private", "move")
BulkStatus = Literal["pending", "consolidated", "all"]
DEFAULT_MAX = 10_000
SAMPLE = 20
SCOPE_WINDOW = 5_000  # `seq` places read per query when walking a scope's log
AGENT_SCOPE_PAGE = 100
MAX_EXTERNAL_ID = 128
MAX_QUERY_CHARS = 200
FILTER_FIELDS = (
    "scope_id",
    "session_id",
    "speaker_user_id",
    "q",
    "observed_after",
    "observed_before",
    "status",
    "unused_days",
)
UNUSED_DAYS_RANGE = (1, 3650)


@dataclass(frozen=True)
class BulkFilter:
    """Which observations of an agent a bulk action takes (deleted ones never)."""

    scope_id: str | None = None
    session_id: str | None = None
    speaker_user_id: str | None = None
    q: str | None = None
    observed_after: datetime | None = None
    observed_before: datetime | None = None
    status: BulkStatus | None = None
    # Not retrieved (by a context or search) in this many days, and older than that
    # (`streams.memory.unused`): what nobody has used lately.
    unused_days: int | None = None

    def is_empty(self) -> bool:
        return all(
            value is None or value == ""
            for value in (
                self.scope_id,
                self.session_id,
                self.speaker_user_id,
                self.q,
                self.observed_after,
                self.observed_before,
                self.unused_days,
            )
        ) and self.status in (None, "all")

    def describe(self) -> dict[str, Any]:
        """The filter as the audit entry and the job keep it (set fields only)."""
        out: dict[str, Any] = {}
        for name in FILTER_FIELDS:
            value = getattr(self, name)
            if value is None or value == "":
                continue
            out[name] = value.isoformat() if isinstance(value, datetime) else value
        return out

    def check(self) -> None:
        """Every field as any other write checks it; at least one field narrows."""
        if self.is_empty():
            raise InvalidInput(
                "the filter needs at least one field: scope_id, session_id, speaker_user_id, "
                "q, observed_after, observed_before, status or unused_days",
                details=[{"field": "filter"}],
            )
        if self.scope_id is not None and parse_object_id(self.scope_id) is None:
            raise NotFound("scope not found")
        for name in ("session_id", "speaker_user_id"):
            value = getattr(self, name)
            if value is not None and not (1 <= len(value) <= MAX_EXTERNAL_ID):
                raise InvalidInput(
                    f"{name} must be 1..{MAX_EXTERNAL_ID} chars", details=[{"field": name}]
                )
        if self.q is not None and not (1 <= len(self.q.strip()) <= MAX_QUERY_CHARS):
            raise InvalidInput(f"q must be 1..{MAX_QUERY_CHARS} chars", details=[{"field": "q"}])
        for name in ("observed_after", "observed_before"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise InvalidInput(f"{name} needs a timezone", details=[{"field": name}])
            if value is not None and not _storable(value):
                raise InvalidInput(f"{name} is out of range", details=[{"field": name}])
        if (
            self.observed_after is not None
            and self.observed_before is not None
            and self.observed_after >= self.observed_before
        ):
            raise InvalidInput(
                "observed_after must be before observed_before",
                details=[{"field": "observed_after"}],
            )
        if self.unused_days is not None:
            unused_days_check(self.unused_days)
        if self.status is not None and self.status not in ("pending", "consolidated", "all"):
            raise InvalidInput(
                "status must be pending, consolidated or all", details=[{"field": "status"}]
            )

    def extra(self) -> dict[str, Any]:
        """The fields that ride inside the query of whichever index leads."""
        query: dict[str, Any] = {"deleted_at": None}
        if self.session_id:
            query["source_session_id"] = self.session_id
        if self.speaker_user_id:
            query["related_user_ids"] = self.speaker_user_id
        if self.q:
            query["content"] = re.compile(re.escape(self.q.strip()), re.IGNORECASE)
        window: dict[str, datetime] = {}
        if self.observed_after is not None:
            window["$gte"] = self.observed_after
        if self.observed_before is not None:
            window["$lt"] = self.observed_before
        if window:
            query["observed_at"] = window
        if self.status in ("pending", "consolidated"):
            query["consolidated"] = self.status == "consolidated"
        if self.unused_days is not None:
            query.update(unused_query(days=self.unused_days, now=utcnow()))
        return query


def unused_days_check(days: object) -> int:
    """Days as a filter takes them: a whole number in `UNUSED_DAYS_RANGE`."""
    low, high = UNUSED_DAYS_RANGE
    if isinstance(days, bool) or not isinstance(days, int) or not low <= days <= high:
        raise InvalidInput(
            f"unused_days must be a whole number of days, {low}..{high}",
            details=[{"field": "unused_days"}],
        )
    return days


def unused_query(*, days: int, now: datetime) -> dict[str, Any]:
    """Observations older than `days` that no context or search retrieved in that time
    (never, or last before the cut). `$not` keeps it one query: a top-level `$or` is a
    full scan on the embedded store."""
    cut = now - timedelta(days=days)
    return {"created_at": {"$lt": cut}, "last_accessed_at": {"$not": {"$gte": cut}}}


def _storable(value: datetime) -> bool:
    """A time the store can hold: in UTC within years 1..9999 (0001-01-01T00:00+05:00 is not)."""
    try:
        value.astimezone(UTC)
    except OverflowError:
        return False
    return True


@dataclass
class BulkMatch:
    """What a filter matched: `(scope_id, seq, observation_id)` newest first, and a sample."""

    entries: list[tuple[str, int, str]] = field(default_factory=list)
    sample: list[Observation] = field(default_factory=list)

    @property
    def matched(self) -> int:
        return len(self.entries)


def bulk_target(
    *,
    store: MemoryStore,
    agent_id: str,
    action: BulkAction,
    target_scope_id: str | None,
    visible_agents: frozenset[str] | None = None,
) -> Scope | None:
    """The scope a move files into: of the same agent (else 422), active (a paused scope
    takes no writes: 422); unknown, or of an agent the caller may not see: 404. Only a move
    takes one."""
    if action not in BULK_ACTIONS:
        raise InvalidInput("action must be delete, private or move", details=[{"field": "action"}])
    if action != "move":
        if target_scope_id is not None:
            raise InvalidInput(
                "target_scope_id is for a move only", details=[{"field": "target_scope_id"}]
            )
        return None
    if not target_scope_id:
        raise InvalidInput("a move needs target_scope_id", details=[{"field": "target_scope_id"}])
    oid = parse_object_id(target_scope_id)
    target = store.scopes.get(oid) if oid is not None else None
    if target is None or (visible_agents is not None and target.agent_id not in visible_agents):
        raise NotFound("target scope not found")
    if target.agent_id != agent_id:
        raise InvalidInput(
            "a move stays within the agent: the target scope belongs to another agent",
            details=[{"field": "target_scope_id"}],
        )
    if not target.is_active:
        raise InvalidInput(
            "the target scope is paused; resume it first", details=[{"field": "target_scope_id"}]
        )
    return target


def bulk_match(
    *,
    store: MemoryStore,
    agent_id: str,
    bulk_filter: BulkFilter,
    action: BulkAction = "delete",
    target: Scope | None = None,
    max_matched: int = DEFAULT_MAX,
) -> BulkMatch:
    """The observations the filter takes for this action (those it would change: a move
    leaves out what is in the target already, mark-private what is private already).

    InvalidInput when more than `max_matched` match; NotFound for a scope of another agent.
    """
    bulk_filter.check()
    repo = store.bulk
    extra = bulk_filter.extra()
    if action == "private":
        extra["private"] = False
    limit = max_matched + 1
    docs: list[dict[str, Any]] = []
    scope: Scope | None = None
    if bulk_filter.scope_id:
        scope = store.scopes.get(ObjectId(bulk_filter.scope_id))
        if scope is None or scope.agent_id != agent_id:
            raise NotFound("scope not found")
    if bulk_filter.session_id or bulk_filter.speaker_user_id:
        # A session or a person holds far fewer observations than a scope can: their index
        # leads, and the scope rides in the query (a scope of 100,000 walked whole took 65 s
        # on the embedded store to find one session's 10,000).
        key, value = (
            ("source_session_id", bulk_filter.session_id)
            if bulk_filter.session_id
            else ("related_user_ids", bulk_filter.speaker_user_id)
        )
        assert value is not None
        if bulk_filter.scope_id:
            extra["scope_id"] = ObjectId(bulk_filter.scope_id)
        docs = repo.agent_matches(agent_id, key=key, value=value, extra=extra, limit=limit)
    elif scope is not None:
        docs = _walk_scope(repo, scope, extra, limit)
    else:
        docs = _walk_agent(store, repo, agent_id, extra, limit)
    if target is not None:
        docs = [d for d in docs if str(d["scope_id"]) != target.id]
    if len(docs) > max_matched:
        raise InvalidInput(
            f"more than {max_matched} observations match; narrow the filter",
            details=[{"field": "filter", "max": max_matched}],
        )
    entries = [(str(d["scope_id"]), int(d["seq"]), str(d["_id"])) for d in docs]
    sample = store.observations.get_many([ObjectId(i) for _, _, i in entries[:SAMPLE]])
    return BulkMatch(entries=entries, sample=sample)


def _walk_scope(
    repo: BulkRepository, scope: Scope, extra: dict[str, Any], limit: int
) -> list[dict[str, Any]]:
    """The scope's log from the newest place down, one closed `seq` window at a time."""
    found: list[dict[str, Any]] = []
    oid = ObjectId(scope.id)
    high = scope.observation_seq
    while high > 0 and len(found) < limit:
        low = max(high - SCOPE_WINDOW, 0)
        found += repo.scope_window(oid, low_seq=low, high_seq=high, extra=extra)
        high = low
    return found[:limit]


def _walk_agent(
    store: MemoryStore, repo: BulkRepository, agent_id: str, extra: dict[str, Any], limit: int
) -> list[dict[str, Any]]:
    """No scope, session or speaker named: every scope of the agent, newest first."""
    found: list[dict[str, Any]] = []
    agent = store.agents.get(agent_id)
    top = agent.scope_seq if agent is not None else 0
    before: int | None = None
    while len(found) < limit:
        scopes, before = store.scopes.page(
            agent_id=agent_id, top_seq=top, before=before, limit=AGENT_SCOPE_PAGE
        )
        for scope in scopes:
            found += _walk_scope(repo, scope, extra, limit - len(found))
            if len(found) >= limit:
                break
        if before is None:
            break
    return found[:limit]
