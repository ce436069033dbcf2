"""Erasure tombstones: forget stays forgotten (issue 37).

Forget-user leaves a tombstone (`streams/store/tombstones.py`: a keyed hash of the agent
and user id, no personal data). Every path that could bring the user back asks this
module, at its lowest common point:

- `observations_append` (streams/memory/observations.py), which every observation write
  goes through, drops for import, legacy migration, formation and propagation the
  observations a tombstone covers (a hand add by an API key or a person is a new memory
  made on purpose, and is not checked): those in the user's individual scope and those whose
  `related_user_ids` name them. Callers that report (import, propagation) ask first with
  `erased_users` and say what they refused.
- `messages_ingest` (streams/memory/formation.py), under the sessions API and the chat
  proxy's ingest job: a late message of that user is not buffered.

Only an admin lifts a tombstone (`do_tombstone_lift`), with a reason, audited.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from streams.core.documents import Observation, Scope
from streams.core.exceptions import Refused
from streams.store import MemoryStore, StoreSession

REASON = "forgotten"
# The write origins (`streams.guard.screening.WriteOrigin`) `observations_append` checks.
ERASURE_CHECKED = frozenset({"extraction", "propagation", "import", "migration", "restore"})
# A hand add (an API key's, a person's): refused whole, 409 `forgotten` (`Forgotten`).
HAND_ADDS = frozenset({"api", "operator"})
# What a tombstone blocks, as the forget receipt lists it.
BLOCKS = (
    "import of the user's scope and of observations naming them",
    "legacy migration of their memory",
    "ingest of their late messages (sessions API and chat proxy)",
    "formation and propagation of observations naming them",
)


def erased_users(
    *,
    store: MemoryStore,
    agent_id: str,
    user_ids: Iterable[str | None],
    session: StoreSession | None = None,
) -> set[str]:
    """Those of `user_ids` forgotten in this agent (one indexed read; none for no ids)."""
    wanted = sorted({u for u in user_ids if u})
    if not wanted:
        return set()
    return store.tombstones.covered(agent_id=agent_id, user_ids=wanted, session=session)


def observation_users(scope: Scope, observation: Observation) -> set[str]:
    """The users an observation is about: its scope's user and those it names."""
    users = set(observation.related_user_ids)
    if scope.scope_type == "individual" and scope.user_id:
        users.add(scope.user_id)
    return users


def without_erased(
    *,
    store: MemoryStore,
    scope: Scope,
    observations: list[Observation],
    session: StoreSession | None = None,
) -> tuple[list[Observation], list[Observation]]:
    """(kept, refused): the observations no tombstone covers, and those it does."""
    users = (
        set().union(*(observation_users(scope, o) for o in observations)) if observations else set()
    )
    erased = erased_users(store=store, agent_id=scope.agent_id, user_ids=users, session=session)
    if not erased:
        return observations, []
    kept = [o for o in observations if not observation_users(scope, o) & erased]
    refused = [o for o in observations if observation_users(scope, o) & erased]
    return kept, refused


class Forgotten(Refused):
    """A hand add about a user a tombstone covers: 409 `forgotten`; only lifting the
    tombstone (an admin, with a reason) lets it in."""

    code = "forgotten"


def erasure_begin(
    *, store: MemoryStore, agent_id: str, user_id: str, now: datetime, job_id: str | None
) -> None:
    """The forget's first step: the tombstone, and its mark on the user's own scope (so
    a hand add into it, which reads the scope anyway, is refused with no read more)."""
    store.tombstones.put(agent_id=agent_id, user_id=user_id, now=now, job_id=job_id)
    store.scopes.mark_forgotten(agent_id=agent_id, user_id=user_id, at=now)


def refuse_forgotten(*, scope: Scope, observations: list[Observation]) -> None:
    """Raise `Forgotten` for a hand add into a user's own scope that a tombstone marks
    (`Scope.forgotten_at`). A hand add into a shared scope names no user."""
    if scope.scope_type == "individual" and scope.forgotten_at is not None:
        raise Forgotten(
            "the user was forgotten: their tombstone refuses new memory about them"
            " (an admin may lift it, with a reason)",
            details=[{"user_id": scope.user_id, "reason": REASON}],
        )


def tombstone_get(*, store: MemoryStore, agent_id: str, user_id: str) -> dict[str, Any] | None:
    """The user's tombstone (`forgotten_at`, no personal data), or None: the Users page."""
    return store.tombstones.get(agent_id=agent_id, user_id=user_id)


def refused_entries(user_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The results' `refused` list: one entry per user, sorted."""
    return [{"user_id": u, "reason": REASON} for u in sorted(set(user_ids))]


# What a record of a call made for a forgotten user keeps (context and chat calls):
# ids, times and counts, none of the words, nor the user's name or id.
CALL_RECORD_KEEPS = frozenset(
    {
        "_id",
        "agent_id",
        "session_id",
        "group_ids",
        "source",
        "caller",
        "created_at",
        "finished_at",
        "expires_at",
        "tokens",
        "search_ms",
        "retrieved_ids",
        "model",
        "upstream_model",
        "stream",
        "outcome",
        "upstream_status",
        "first_chunk_ms",
        "duration_ms",
        "memory",
        "context_tokens",
        "context_call_id",
        "quoted_observation_ids",
        "quoted_versions",
    }
)


def forgotten_call_record(record: dict[str, Any]) -> dict[str, Any]:
    """A call record reduced for a forgotten user: `CALL_RECORD_KEEPS` only, and
    `forgotten: True` (the Users page and the log say why the rest is absent)."""
    kept = {k: v for k, v in record.items() if k in CALL_RECORD_KEEPS}
    return {**kept, "user_id": None, "forgotten": True}
