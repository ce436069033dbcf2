"""Observation actions: add (one or a batch), edit or mark private, delete."""

from __future__ import annotations

from datetime import datetime

from bson import ObjectId

from streams.actions.base import Actor, schedule
from streams.actions.tx import ActionTx, action_transaction, run_action
from streams.core.documents import Job, Observation, Scope
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.guard.screening import origin_of
from streams.memory.feedback import observation_feedback, observation_fresh
from streams.memory.observation_batch import (
    BatchItem,
    BatchResult,
    observation_add_once,
    observation_batch_add,
)
from streams.memory.observation_changes import (
    UNSET,
    Unset,
    observation_delete_write,
    observation_update_after,
    observation_update_plan,
    observation_update_write,
)
from streams.memory.observations import MarkPrivate, observation_add, observations_append
from streams.memory.source_change import SourceChange
from streams.records.audit import audit_changes, content_digest
from streams.records.corrections import Correction, correction_of
from streams.store import MemoryStore


def do_observation_add(
    *,
    store: MemoryStore,
    actor: Actor,
    scope: Scope,
    content: str,
    private: bool = False,
    observed_at: datetime | None = None,
    expires_at: datetime | None = None,
) -> Observation:
    """A manual addition; it joins the scope's pending observations. The add, its audit
    entry and its threshold job commit in this action's one transaction (one journal
    sync, one `bulkWrite`); the job is dispatched after the commit."""
    jobs: list[Job] = []
    observation = observation_add(
        store=store,
        scope=scope,
        content=content,
        private=private,
        observed_at=observed_at,
        follow_ups=jobs,
        actor=str(actor),
        expires_at=expires_at,
        transact=action_transaction(store, actor),
        mark_private=_mark_kept_private(store, actor),
    )
    schedule(jobs)
    return observation


def do_observation_add_once(
    *,
    store: MemoryStore,
    actor: Actor,
    scope: Scope,
    content: str,
    client_id: str,
    private: bool = False,
    observed_at: datetime | None = None,
) -> tuple[Observation, bool]:
    """A manual addition keyed by the caller's `client_id`: (observation, created); a
    repeat returns the first observation and writes nothing (`observation_add_once`)."""
    jobs: list[Job] = []
    result = observation_add_once(
        store=store,
        scope=scope,
        content=content,
        client_id=client_id,
        private=private,
        observed_at=observed_at,
        follow_ups=jobs,
        actor=str(actor),
        transact=action_transaction(store, actor),
        mark_private=_mark_kept_private(store, actor),
    )
    schedule(jobs)
    return result


def do_observation_add_batch(
    *, store: MemoryStore, actor: Actor, scope: Scope, items: list[BatchItem]
) -> BatchResult:
    """A batch in one transaction with its audit entry (written only when it stored
    anything) and its threshold job, dispatched after the commit."""
    jobs: list[Job] = []
    result = observation_batch_add(
        store=store,
        scope=scope,
        items=items,
        follow_ups=jobs,
        actor=str(actor),
        transact=action_transaction(store, actor),
        mark_private=_mark_kept_private(store, actor),
    )
    schedule(jobs)
    return result


def do_observation_update(
    *,
    store: MemoryStore,
    actor: Actor,
    observation: Observation,
    content: str | None = None,
    private: bool | None = None,
    expires_at: datetime | None | Unset = UNSET,
    reason: str | None = None,
) -> tuple[Observation, list[Job]]:
    """Correct the content and/or the private flag; the summary is the before/after of
    what changed (text as digests). The change, its entry and its follow-up job commit
    together; returns the rebuilds that job sends once done.

    A new text the scope's screen holds (flagged in a shared scope) is not applied: it
    waits for review as a held copy (`review.edit_of`, the entry's `held_for_review`),
    and approving it applies it (`streams.actions.review`). A new text or marking private
    is a correction (`streams.records.corrections`), recorded with the change."""
    scope = store.scopes.get(ObjectId(observation.scope_id))
    if scope is None:
        raise NotFound("scope not found")
    plan = observation_update_plan(
        observation=observation,
        scope_type=scope.scope_type,
        content=content,
        private=private,
        expires_at=expires_at,
    )

    def write(tx: ActionTx) -> list[Job]:
        follow_up = None
        if plan.changes:
            follow_up = observation_update_write(
                store=store, plan=plan, actor=str(actor), session=tx.session
            )
            tx.correct(_update_corrections(store, observation, scope, plan.fields, actor, reason))
        held: dict[str, str] = {}
        if plan.proposal is not None:
            held["held_for_review"] = _propose_edit(
                store=store, tx=tx, observation=observation, text=plan.proposal, actor=actor
            )
        tx.audit(
            action="observation.update",
            object_type="observation",
            object_id=observation.id,
            agent_id=observation.agent_id,
            summary=audit_changes(
                {
                    "content": observation.content,
                    "private": observation.private,
                    "expires_at": observation.expires_at,
                },
                plan.after(),
            )
            | held,
        )
        return _follow(tx, follow_up)

    rebuilds = run_action(store, actor, write)
    return observation_update_after(store=store, plan=plan), rebuilds


def _update_corrections(
    store: MemoryStore,
    observation: Observation,
    scope: Scope,
    fields: dict[str, object],
    actor: Actor,
    reason: str | None,
) -> list[Correction]:
    """An applied new text is an edit; a flag turned on is a private correction."""
    made = []
    if "content" in fields:
        after = str(fields["content"])
        made.append(
            correction_of(
                store=store,
                observation=observation,
                scope=scope,
                what="edit",
                actor=str(actor),
                after=after,
                reason=reason,
            )
        )
    if fields.get("private") is True:
        made.append(
            correction_of(
                store=store,
                observation=observation,
                scope=scope,
                what="private",
                actor=str(actor),
                after=str(fields.get("content", observation.content)),
                reason=reason,
            )
        )
    return made


def _propose_edit(
    *, store: MemoryStore, tx: ActionTx, observation: Observation, text: str, actor: Actor
) -> str:
    """An edit that waits for review: a held copy of the observation with the new text
    (through the screen, which holds it), pointing at the one it would change."""
    proposal = Observation(
        scope_id=observation.scope_id,
        agent_id=observation.agent_id,
        content=text,
        observed_at=observation.observed_at,
        source_session_id=observation.source_session_id,
        source_message_ids=list(observation.source_message_ids),
        related_user_ids=list(observation.related_user_ids),
        private=observation.private,
        review={"edit_of": observation.id},
        origin="edit",
    )
    duplicates: dict[str, Observation] = {}
    observations_append(
        store=store,
        scope_id=observation.scope_id,
        observations=[proposal],
        session=tx.session,
        now=proposal.created_at,
        origin=origin_of(str(actor)),
        duplicates=duplicates,
    )
    if duplicates:
        raise Conflict(
            "another observation of this scope holds the same text",
            details=[{"field": "content"}],
        )
    if not proposal.held:  # the screen holds what the plan held back; never applied here
        raise Conflict("the edit could not be held for review")
    return proposal.id


def do_observation_delete(
    *, store: MemoryStore, actor: Actor, observation: Observation, reason: str | None = None
) -> list[Job]:
    """Soft delete (deleting twice is fine); returns the rebuilds it scheduled. The delete,
    its entry, its correction (the first delete only) and its follow-up job commit
    together; the rebuilds follow that job."""
    was_deleted = observation.deleted
    scope = None if was_deleted else store.scopes.get(ObjectId(observation.scope_id))

    def write(tx: ActionTx) -> list[Job]:
        deletion = observation_delete_write(
            store=store, observation=observation, session=tx.session, by=str(tx.actor)
        )
        if scope is not None:
            correction = correction_of(
                store=store,
                observation=observation,
                scope=scope,
                what="delete",
                actor=str(actor),
                reason=reason,
            )
            tx.correct([correction])
        tx.audit(
            action="observation.delete",
            object_type="observation",
            object_id=observation.id,
            agent_id=observation.agent_id,
            summary={
                "content": content_digest(observation.content),
                "already_deleted": was_deleted,
                **({"reason": reason[:500]} if reason else {}),
            },
        )
        return _follow(tx, deletion.follow_up)

    return run_action(store, actor, write)


def do_observation_merge(
    *, store: MemoryStore, actor: Actor, keep: Observation, drop: Observation
) -> list[Job]:
    """Merge two near duplicates of one scope: keep one, delete the other (one rebuild at
    most, where the deleted one was consolidated); the kept one no longer points at it.
    The delete, the kept one's change, the entry and the follow-up job commit together."""
    if keep.id == drop.id:
        raise InvalidInput("an observation cannot merge with itself", details=[{"field": "drop"}])
    if keep.scope_id != drop.scope_id:
        raise InvalidInput("only observations of one scope merge", details=[{"field": "drop"}])
    if keep.deleted or drop.deleted:
        raise Conflict("a deleted observation cannot be merged")

    def write(tx: ActionTx) -> list[Job]:
        deletion = observation_delete_write(
            store=store, observation=drop, session=tx.session, by=str(tx.actor)
        )
        if keep.similar_to == drop.id:
            store.observations.update_fields(
                ObjectId(keep.id), {"similar_to": None}, session=tx.session
            )
        tx.audit(
            action="observation.merge",
            object_type="observation",
            object_id=keep.id,
            agent_id=keep.agent_id,
            summary={
                "kept": keep.id,
                "deleted": drop.id,
                "kept_content": content_digest(keep.content),
                "deleted_content": content_digest(drop.content),
            },
        )
        return _follow(tx, deletion.follow_up)

    return run_action(store, actor, write)


def _mark_kept_private(store: MemoryStore, actor: Actor) -> MarkPrivate:
    """For an add that matched a live observation and asked for `private`: mark that one
    private, audited like an edit, its entry and its follow-up job in one transaction."""

    def mark(kept: Observation) -> Observation:
        plan = observation_update_plan(observation=kept, private=True)

        def write(tx: ActionTx) -> None:
            change = observation_update_write(
                store=store, plan=plan, actor=str(actor), session=tx.session
            )
            tx.audit(
                action="observation.update",
                object_type="observation",
                object_id=kept.id,
                agent_id=kept.agent_id,
                summary={"private": {"before": False, "after": True}, "reason": "duplicate add"},
            )
            _follow(tx, change)

        run_action(store, actor, write)
        return observation_update_after(store=store, plan=plan)

    return mark


def _follow(tx: ActionTx, follow_up: SourceChange | None) -> list[Job]:
    """Send the change's follow-up job after the commit; its rebuilds wait for it (it
    sends them), and are what the caller shows as "rebuild pending"."""
    if follow_up is None:
        return []
    tx.schedule(follow_up.job)
    return list(follow_up.rebuilds)


def do_observation_feedback(
    *,
    store: MemoryStore,
    actor: Actor,
    observation_id: str,
    useful: bool,
    context_call_id: str | None = None,
    agent_ids: frozenset[str] | None = None,
) -> Observation:
    """Feedback on a retrieved observation; its audit entry (when it counted) commits with
    the count."""

    def write(tx: ActionTx) -> Observation:
        observation, counted = observation_feedback(
            store=store,
            observation_id=observation_id,
            useful=useful,
            context_call_id=context_call_id,
            agent_ids=agent_ids,
            session=tx.session,
        )
        if counted:
            tx.audit(
                action="observation.feedback",
                object_type="observation",
                object_id=observation.id,
                agent_id=observation.agent_id,
                summary={"useful": useful, "context_call_id": context_call_id},
            )
        return observation

    observation = run_action(store, actor, write)
    return observation_fresh(store=store, observation=observation)
