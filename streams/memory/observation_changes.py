"""Changes to a stored observation: correcting its text, marking it private, setting its
expiry, deleting it. What follows (search terms, rebuilds of what was derived from the
old text, copies, the context log) is a `source_change` job each change writes in its
own transaction (`streams.memory.source_change`): the outbox, sent after the commit."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from bson import ObjectId

from streams.core.documents import MAX_CONTENT_CHARS, Job, Observation, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.screened import ScreenedText
from streams.guard.screening import REFUSED_FLAGS, SHARED_SCOPE_TYPES, screen_text
from streams.memory.rebuild import Change, copies_closure, prune_search_terms
from streams.memory.source_change import SourceChange, source_change_queue
from streams.records.webhooks import observations_changed
from streams.search.dedup import text_key
from streams.search.index import search_index_add, search_index_remove
from streams.store import MemoryStore, StoreSession
from streams.store.observations import TextTaken


class Unset:
    """A keyword left out (where None means "clear")."""


UNSET = Unset()


def observation_update(
    *,
    store: MemoryStore,
    observation: Observation,
    content: str | None = None,
    private: bool | None = None,
    follow_ups: list[Job] | None = None,
    actor: str | None = None,
    expires_at: datetime | None | Unset = UNSET,
) -> Observation:
    """Correct an observation's content or mark it private, or set or clear its expiry
    (`expires_at`: a time, None to clear, UNSET to leave); returns the fresh observation.

    A content change keeps the earlier text in the observation's text history (with
    `actor` and the time), in the same transaction.

    A deleted observation is kept as it was, for the audit: changing it is a conflict.
    What was derived from the old text (or, once private, from the text at all) follows:
    the update's `source_change` job goes to `follow_ups`.
    An action that records the update in the same transaction calls the three parts,
    `observation_update_plan`, `observation_update_write` and `observation_update_after`.
    """
    scope = store.scopes.get(require_object_id(observation.scope_id, what="scope"))
    plan = observation_update_plan(
        observation=observation,
        scope_type=scope.scope_type if scope is not None else "individual",
        content=content,
        private=private,
        expires_at=expires_at,
    )
    if plan.proposal is not None:
        raise Conflict("this edit waits for review: make it through the observation action")
    if plan.changes:
        change = store.in_transaction(
            lambda session: observation_update_write(
                store=store, plan=plan, actor=actor, session=session
            )
        )
        if change is not None and follow_ups is not None:
            follow_ups.append(change.job)
    return observation_update_after(store=store, plan=plan)


@dataclass(frozen=True)
class UpdatePlan:
    """A checked update: the fields it sets, and whether the expiry changes."""

    observation: Observation
    fields: dict[str, object]
    expiry_changes: bool
    expires_at: datetime | None
    # A new text that waits for a person instead (a shared scope's flag rule): stored as
    # a held copy (`review.edit_of`) by the action; never in `fields`.
    proposal: ScreenedText | None = None

    @property
    def changes(self) -> bool:
        return bool(self.fields) or self.expiry_changes

    def after(self) -> dict[str, object]:
        """What the observation holds once the update committed (content, private, expiry)."""
        return {
            "content": self.fields.get("content", self.observation.content),
            "private": self.fields.get("private", self.observation.private),
            "expires_at": self.expires_at if self.expiry_changes else self.observation.expires_at,
        }


def observation_update_plan(
    *,
    observation: Observation,
    scope_type: str | None = None,
    content: str | None = None,
    private: bool | None = None,
    expires_at: datetime | None | Unset = UNSET,
    reviewed: bool = False,
) -> UpdatePlan:
    """Check an update and work out its fields; nothing is written (see `observation_update`).

    An edit is a write: its text passes the screen. In a shared scope (`scope_type`) a new
    text flagged `pii:*` or `instruction` is not applied but waits for review (`proposal`;
    the old text stays live until a person decides), unless it is that decision
    (`reviewed`). A new text needs the scope's type; other changes do not."""
    fields: dict[str, object] = {}
    proposal: ScreenedText | None = None
    if content is not None:
        fields, proposal = _content_fields(observation, content, scope_type, reviewed)
    if private is not None:
        fields["private"] = private
    expiry_changes = not isinstance(expires_at, Unset) and expires_at != observation.expires_at
    plan = UpdatePlan(
        observation=observation,
        fields=fields,
        expiry_changes=expiry_changes,
        expires_at=None if isinstance(expires_at, Unset) else expires_at,
        proposal=proposal,
    )
    if not plan.changes and proposal is None:
        return plan
    if observation.deleted:
        raise Conflict("the observation is deleted; it cannot be changed")
    if expiry_changes and observation.expiry_swept:
        raise Conflict(
            "the observation expired and left memory; its expiry cannot change",
            details=[{"field": "expires_at"}],
        )
    return plan


def _content_fields(
    observation: Observation, content: str, scope_type: str | None, reviewed: bool
) -> tuple[dict[str, object], ScreenedText | None]:
    """The fields a new text sets (screened: secrets redacted, flags renewed), or in a
    shared scope a flagged text held as the proposal instead (unless it is that review)."""
    content = content.strip()
    if not content:
        raise InvalidInput("content must not be empty", details=[{"field": "content"}])
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content is longer than {MAX_CONTENT_CHARS} characters",
            details=[{"field": "content"}],
        )
    if scope_type is None:
        raise ValueError("an edit of the text needs the scope's type (its screen)")
    screened, detection = screen_text(content)
    held = scope_type in SHARED_SCOPE_TYPES and any(f in REFUSED_FLAGS for f in detection.flags)
    if held and not reviewed and screened != observation.content:
        return {}, screened
    fields: dict[str, object] = {
        "content": screened,
        "flags": list(detection.flags),
        "flag_spans": [span.to_dict() for span in detection.spans],
    }
    if screened != observation.content:
        # Its vector described the old text: dropped, and the next embedding walk
        # embeds the new one (`embedding_stale`); text ranking serves it meanwhile.
        fields.update(embedding=None, embedding_model=None, embedding_stale=True)
        fields["text_key"] = text_key(observation.scope_id, screened)
    return fields, None


def observation_update_write(
    *, store: MemoryStore, plan: UpdatePlan, actor: str | None, session: StoreSession
) -> SourceChange | None:
    """The update's writes, in the caller's transaction, with the follow-up job of a
    content change or of marking it private (for the caller to send after the commit)."""
    observation, fields = plan.observation, plan.fields
    oid = require_object_id(observation.id, what="observation")
    if plan.expiry_changes:
        if not store.observations.set_expiry(oid, plan.expires_at, session=session):
            raise NotFound("observation not found")
        # Its propagated copies say the same fact: they expire with it.
        for copy in copies_closure(store.privacy, [observation.id]):
            if not copy.expiry_swept:
                store.observations.set_expiry(ObjectId(copy.id), plan.expires_at, session=session)
    if not fields:
        return None
    try:
        updated = store.observations.update_fields(
            oid,
            fields,
            scope_id=require_object_id(observation.scope_id, what="scope"),
            session=session,
        )
    except TextTaken as exc:
        raise Conflict(
            "another observation of this scope holds the same text",
            details=[{"field": "content"}],
        ) from exc
    if not updated:
        raise NotFound("observation not found")
    history_id = None
    if "content" in fields and fields["content"] != observation.content:
        history_id = _text_replaced(store, observation, str(fields["content"]), actor, session)
    # As the update left it, read in its transaction: a run may have absorbed it since
    # the caller read it, and then its versions wait for a rebuild without the old text.
    changed = store.observations.get(oid, session=session)
    assert changed is not None  # the update matched it
    observations_changed(
        store=store, event="observation.updated", observations=[changed], session=session
    )
    if changed.private and not observation.private:
        kind: Change = "private"
    elif history_id is not None:
        kind = "edit"
    else:
        return None
    return source_change_queue(
        store=store, observation=changed, change=kind, session=session, history_id=history_id
    )


def _text_replaced(
    store: MemoryStore,
    observation: Observation,
    content: str,
    actor: str | None,
    session: StoreSession,
) -> ObjectId:
    """Keep the old text in its history and re-index (the old content's terms out, the
    new content's in, atomically); the history entry's id."""
    history_id = store.text_history.insert(
        observation_id=ObjectId(observation.id),
        scope_id=require_object_id(observation.scope_id, what="scope"),
        agent_id=observation.agent_id,
        content=observation.content,
        actor=actor,
        at=utcnow(),
        session=session,
    )
    search_index_remove(store=store, observations=[observation], session=session)
    renewed = replace(observation, content=content)
    search_index_add(store=store, observations=[renewed], session=session)
    prune_search_terms(
        store=store, scope_id=observation.scope_id, texts=[observation.content], session=session
    )
    return history_id


def observation_update_after(*, store: MemoryStore, plan: UpdatePlan) -> Observation:
    """After the update committed: the fresh observation (what follows is its job's)."""
    observation = plan.observation
    if not plan.changes:
        return observation
    fresh = store.observations.get(require_object_id(observation.id, what="observation"))
    if fresh is None:
        raise NotFound("observation not found")
    return fresh


def observation_delete(
    *, store: MemoryStore, observation: Observation, follow_ups: list[Job] | None = None
) -> None:
    """Soft delete: kept for the audit, out of every context, search, default list and
    pending count; consolidations that absorbed it are rebuilt without it and its
    propagated copies are removed, by its `source_change` job (in `follow_ups`).

    Deleting a deleted observation changes nothing (its first deletion time stands).
    An action that records the deletion in the same transaction calls
    `observation_delete_write` itself, and sends `Deletion.follow_up.job` after it.
    """
    if observation.deleted:
        return
    deletion = store.in_transaction(
        lambda session: observation_delete_write(
            store=store, observation=observation, session=session
        )
    )
    if deletion.follow_up is not None and follow_ups is not None:
        follow_ups.append(deletion.follow_up.job)


@dataclass(frozen=True)
class Deletion:
    """What a delete's transaction did: whether it deleted, and its follow-up job."""

    deleted: bool = False
    follow_up: SourceChange | None = None


def observation_delete_write(
    *, store: MemoryStore, observation: Observation, session: StoreSession, by: str | None = None
) -> Deletion:
    """The delete's writes, in the caller's transaction (a deleted one: none); `by`, the
    actor, is kept with the deletion for the pages that show it removed."""
    if observation.deleted:
        return Deletion()
    oid = require_object_id(observation.id, what="observation")
    scope_oid = require_object_id(observation.scope_id, what="scope")
    now = utcnow()
    found = store.observations.mark_deleted(
        oid, scope_id=scope_oid, now=now, by=by, session=session
    )
    if found is None:
        if store.observations.get(oid) is None:
            raise NotFound("observation not found")
        return Deletion()
    # As the delete found it, not as the caller read it: a run may have absorbed it (or
    # an edit changed it) in between, and what it taints follows from that (the short
    # rehearsal's context quoted a version that absorbed it after the API's read).
    observation = found
    search_index_remove(store=store, observations=[observation], session=session)
    prune_search_terms(
        store=store, scope_id=observation.scope_id, texts=[observation.content], session=session
    )
    store.text_history.purge([oid], session=session)  # earlier texts go with it
    gone = replace(observation, deleted_at=now, deleted_by=by)
    observations_changed(
        store=store, event="observation.deleted", observations=[gone], session=session
    )
    was_pending = store.scopes.pull_pending(scope_oid, [oid], session=session) > 0
    store.scopes.count_deleted(scope_oid, session=session)
    # A deleted observation leaves every count: the scope's, the agent's, pending.
    store.agents.adjust_counters(
        observation.agent_id,
        now=now,
        observations=-1,
        pending=-int(was_pending),
        session=session,
    )
    follow_up = source_change_queue(
        store=store, observation=observation, change="delete", session=session
    )
    return Deletion(deleted=True, follow_up=follow_up)
