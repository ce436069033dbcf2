"""Selectors: the reads the API and UI make that are not a domain query of their own.

Interfaces read through the domain, never through the repositories (`streams/store`):
these are thin, bounded reads with ids parsed here, so a page never builds an
ObjectId or knows a repository's method names.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from streams.core.documents import (
    Agent,
    BufferedMessage,
    ConsolidationVersion,
    Job,
    JobStatus,
    Observation,
    Scope,
)
from streams.core.exceptions import NotFound
from streams.core.ids import parse_object_id, require_object_id
from streams.store import MemoryStore


def agents_page(*, store: MemoryStore, limit: int, after: str | None = None) -> list[Agent]:
    """Agents in id order after `after` (at most `limit`)."""
    return store.agents.list_page(after=after, limit=limit)


def busiest_agent(*, store: MemoryStore) -> Agent | None:
    """The agent a page opens on when none is asked for: the one with the most memory,
    not the first by name (an agent made by hand, or by a typo, is empty)."""
    return store.agents.busiest()


def scopes_by_ids(*, store: MemoryStore, scope_ids: list[str]) -> list[Scope]:
    """The scopes of a bounded id list (malformed ids are skipped)."""
    oids = [oid for oid in (parse_object_id(i) for i in scope_ids) if oid is not None]
    return store.scopes.get_many(oids) if oids else []


def shard_find(*, store: MemoryStore, agent_id: str, name: str | None) -> Scope | None:
    """The agent's collective scope (`name` None) or its named shard, by identity."""
    return store.scopes.find_by_identity(
        agent_id=agent_id, scope_type="collective", user_id=None, group_id=None, name=name
    )


def active_shards(*, store: MemoryStore, agent_id: str, limit: int) -> list[Scope]:
    return store.scopes.active_shards(agent_id, limit=limit)


def consolidation_version(
    *, store: MemoryStore, scope: Scope, version: int
) -> ConsolidationVersion | None:
    """One version of the scope's consolidation, None when there is none."""
    return store.consolidations.get(require_object_id(scope.id, what="scope"), version)


def observations_by_ids(*, store: MemoryStore, observation_ids: list[str]) -> list[Observation]:
    oids = [require_object_id(i, what="observation") for i in observation_ids]
    return store.observations.get_many(oids)


def job_find(*, store: MemoryStore, job_id: str) -> Job | None:
    """The job, or None for an unknown or malformed id."""
    oid = parse_object_id(job_id)
    return store.jobs.get(oid) if oid is not None else None


def scope_active_job(
    *, store: MemoryStore, scope: Scope, kind: str, statuses: list[str] | None = None
) -> Job | None:
    """A job of this kind on the scope in one of `statuses` (default: queued or running)."""
    return store.jobs.active_for_scope(
        require_object_id(scope.id, what="scope"), kind, statuses=statuses
    )


def jobs_newest(*, store: MemoryStore, status: JobStatus, limit: int) -> list[Job]:
    """Every agent's jobs in one status, newest first."""
    return store.jobs.page(status=status, agent_id=None, before=None, limit=limit)


def failed_job_counts(*, store: MemoryStore, agent_ids: list[str]) -> dict[str, int]:
    return store.jobs.failed_counts(agent_ids)


def agent_day_counters(
    *, store: MemoryStore, agent_ids: list[str], day: date
) -> dict[str, dict[str, Any]]:
    """Each agent's counters of one day (consolidations, observations, ...)."""
    return store.agent_days.on_day(agent_ids, day)


def session_messages(
    *, store: MemoryStore, agent_id: str, session_id: str, limit: int
) -> list[BufferedMessage]:
    """A session's latest `limit` messages, formed or not, oldest first (the ids that
    observations cite, and who said what)."""
    return store.session_samples.latest_messages(agent_id, session_id, limit=limit)


def agent_get(*, store: MemoryStore, agent_id: str) -> Agent:
    """One agent by id; NotFound when the store has none of that name."""
    agent = store.agents.get(agent_id)
    if agent is None:
        raise NotFound("agent not found")
    return agent
