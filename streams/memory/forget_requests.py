"""Explicit forget (issue 42, item 4): "forget that" or "forget what I said about X" in a
user's message proposes a delete of the matching observations of that user's own scope.

What matches, deterministic (no model):
- a topic ("forget what I said about the blue theme"): the user's current observations
  that hold every term of the topic (stemmed, stop words out), among the best search
  hits for it in their own scope (at most `MAX_MATCHES`);
- no topic ("forget that"): the newest current observation of the user's scope formed
  from the same session (nothing when the session formed none yet: the words were not
  kept, there is nothing to drop).

`MEMORY_FORGET_REQUESTS` decides: `review` (the default) holds one proposal in the review
queue (`review.delete_of`, reason `forget_request`; approving deletes them, rejecting
keeps them); `apply` deletes them at once. Only the user's own scope: shared memory is
never dropped on one member's word.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents import Observation, Scope
from streams.memory.observations import observation_list
from streams.search.index import search_in_scopes
from streams.search.memory_requests import MemoryRequest, memory_request_of
from streams.search.text import term_counts
from streams.store import MemoryStore

Mode = Literal["review", "apply"]
MODES = ("review", "apply")
MAX_MATCHES = 10
REASON = "forget_request"


@dataclass(frozen=True)
class ForgetOutcome:
    """What a forget request did: `proposed` (waits for review), `applied` (deleted),
    or `nothing_found`."""

    status: Literal["proposed", "applied", "nothing_found"]
    observation_ids: list[str] = field(default_factory=list)
    review_id: str | None = None  # the held proposal (review mode)

    def header(self) -> str:
        """`X-Memory-Forget`: the status and how many observations."""
        return f"{self.status}; observations={len(self.observation_ids)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "observation_ids": list(self.observation_ids),
            "review_id": self.review_id,
        }


def forget_request_in(
    messages: list[tuple[str, str | None, str]], *, user_id: str
) -> MemoryRequest | None:
    """The first forget request among `(role, speaker, text)` messages that the user sent
    (`speaker` None: the request's user)."""
    for role, speaker, text in messages:
        if role != "user" or (speaker is not None and speaker != user_id):
            continue
        found = memory_request_of(text)
        if found is not None and found.kind == "forget":
            return found
    return None


def user_scope(*, store: MemoryStore, agent_id: str, user_id: str) -> Scope | None:
    return store.scopes.find_by_identity(
        agent_id=agent_id, scope_type="individual", user_id=user_id, group_id=None, name=None
    )


def forget_matches(
    *, store: MemoryStore, scope: Scope, request: MemoryRequest, session_id: str | None
) -> list[Observation]:
    """The observations of the user's own scope the request names (see the module)."""
    if request.topic is None:
        return _last_of_session(store=store, scope=scope, session_id=session_id)
    wanted = set(term_counts(request.topic))
    if not wanted:
        return []
    hits = search_in_scopes(store=store, scopes=[scope], query=request.topic, limit=20)
    found = [
        h.observation
        for h in hits
        if h.observation.current and wanted <= set(term_counts(h.observation.content))
    ]
    return found[:MAX_MATCHES]


def _last_of_session(
    *, store: MemoryStore, scope: Scope, session_id: str | None
) -> list[Observation]:
    if not session_id:
        return []
    for o in observation_list(store=store, scope=scope, limit=25, include_superseded=False).items:
        if o.current and not o.deleted and o.source_session_id == session_id:
            return [o]
    return []


def forget_proposal(*, scope: Scope, user_id: str, targets: list[Observation]) -> Observation:
    """The held proposal the review queue shows: it names the observations by id (their
    texts stay where they are; the proposal repeats none of them)."""
    count = len(targets)
    return Observation(
        scope_id=scope.id,
        agent_id=scope.agent_id,
        content=f"Forget request: the user asked to delete {count} "
        f"observation{'s' if count != 1 else ''} of their memory.",
        observed_at=max(t.observed_at for t in targets),
        related_user_ids=[user_id],
        review={"reasons": [REASON], "delete_of": [t.id for t in targets]},
    )


def delete_targets(store: MemoryStore, ids: list[str]) -> list[Observation]:
    """The proposal's targets still there to delete."""
    found = store.observations.get_many([ObjectId(i) for i in ids if ObjectId.is_valid(i)])
    return [o for o in found if not o.deleted]
