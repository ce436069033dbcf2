"""Feedback on retrieved memories: the agent says an observation was useful or not.

Counts live on the observation (`useful_count`, `useless_count`); the ranking reads
them as a bounded prior (`streams.search.ranking_lifecycle`), so no number of votes moves a
fact by more than its bound. With a `context_call_id` the same call's feedback on the
same observation counts once (a retried request is not a second voice). An id that is
not one of the agent's context calls is a 404 (issue 40); the log is written behind, so
a call too recent to be stored yet is taken as given, and with the log off
(`MEMORY_CONTEXT_LOG_DAYS=0`) no id can be checked and each is recorded as given.
"""

from __future__ import annotations

from bson import ObjectId

from streams.core.documents import Observation, utcnow
from streams.core.exceptions import InvalidInput, NotFound
from streams.memory.observations import observation_get
from streams.store import MemoryStore, StoreSession


def observation_feedback(
    *,
    store: MemoryStore,
    observation_id: str,
    useful: bool,
    session: StoreSession,
    context_call_id: str | None = None,
    agent_ids: frozenset[str] | None = None,
) -> tuple[Observation, bool]:
    """Count the feedback in the caller's transaction `session` (the feedback action's,
    which audits a counted one); the observation as read before, and whether it counted
    (False: this call's feedback on it was counted before).

    NotFound for a deleted observation, or one of an agent the caller does not see."""
    if context_call_id is not None and not (
        len(context_call_id) == 24 and ObjectId.is_valid(context_call_id)
    ):
        raise InvalidInput(
            "context_call_id is not a context call id", details=[{"field": "context_call_id"}]
        )
    observation = observation_get(store=store, observation_id=observation_id, agent_ids=agent_ids)
    if observation.deleted:
        raise NotFound("observation not found")
    if (
        context_call_id is not None
        and store.context_log_days > 0
        and not store.context_calls.known(
            agent_id=observation.agent_id, call_id=ObjectId(context_call_id), now=utcnow()
        )
    ):
        raise NotFound(
            "context call not found: context_call_id must be one of this agent's calls",
            details=[{"field": "context_call_id"}],
        )
    counted = store.observations.add_feedback(
        ObjectId(observation.id), useful=useful, call_id=context_call_id, session=session
    )
    return observation, bool(counted)


def observation_fresh(*, store: MemoryStore, observation: Observation) -> Observation:
    """The observation as stored now (NotFound once deleted)."""
    fresh = store.observations.get(ObjectId(observation.id))
    if fresh is None or fresh.deleted:
        raise NotFound("observation not found")
    return fresh
