"""The forget-request action (issue 42, item 4): a user's "forget what I said about X"
deletes the matching observations of their own scope at once (`apply`) or holds one
proposal for review (`review`). The writes, their audit entries and the deletes'
follow-up jobs commit together (`run_action`)."""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Observation
from streams.core.exceptions import Conflict
from streams.guard.screening import origin_of
from streams.memory.forget_requests import (
    REASON,
    ForgetOutcome,
    Mode,
    forget_matches,
    forget_proposal,
    user_scope,
)
from streams.memory.observation_changes import observation_delete_write
from streams.memory.observations import observations_append
from streams.records.audit import content_digest
from streams.search.memory_requests import MemoryRequest
from streams.store import MemoryStore


def do_forget_request(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    user_id: str,
    session_id: str | None,
    request: MemoryRequest,
    mode: Mode,
) -> ForgetOutcome:
    """Find what the request names in the user's own scope, then delete or propose."""
    scope = user_scope(store=store, agent_id=agent_id, user_id=user_id)
    targets = (
        forget_matches(store=store, scope=scope, request=request, session_id=session_id)
        if scope is not None
        else []
    )
    if scope is None or not targets:
        return ForgetOutcome(status="nothing_found")
    ids = [t.id for t in targets]
    if mode == "apply":

        def delete(tx: ActionTx) -> ForgetOutcome:
            forget_deletes(store, tx, targets, review_id=None)
            return ForgetOutcome(status="applied", observation_ids=ids)

        return run_action(store, actor, delete)

    def propose(tx: ActionTx) -> ForgetOutcome:
        proposal = forget_proposal(scope=scope, user_id=user_id, targets=targets)
        observations_append(
            store=store,
            scope_id=scope.id,
            observations=[proposal],
            session=tx.session,
            now=proposal.created_at,
            origin=origin_of(str(tx.actor)),
        )
        if not proposal.held:
            raise Conflict("the forget request could not be held for review")
        tx.audit(
            action="observation.forget_request",
            object_type="observation",
            object_id=proposal.id,
            agent_id=agent_id,
            summary={"user_id": user_id, "delete_of": ids, "mode": "review"},
        )
        return ForgetOutcome(status="proposed", observation_ids=ids, review_id=proposal.id)

    return run_action(store, actor, propose)


def forget_deletes(
    store: MemoryStore, tx: ActionTx, targets: list[Observation], *, review_id: str | None
) -> None:
    """Delete each target in the action's transaction, each audited, rebuilds scheduled."""
    for target in targets:
        deletion = observation_delete_write(
            store=store, observation=target, session=tx.session, by=str(tx.actor)
        )
        tx.audit(
            action="observation.delete",
            object_type="observation",
            object_id=target.id,
            agent_id=target.agent_id,
            summary={
                "content": content_digest(target.content),
                "reason": REASON,
                "review_id": review_id,
            },
        )
        if deletion.follow_up is not None:
            tx.schedule(deletion.follow_up.job)
