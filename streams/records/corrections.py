"""Corrections: what support changed in memory, kept as evidence about the prompt that
formed it (issue 38, item 5).

Every support correction (an observation edit, a delete with a reason, marking private, a
move, a review rejection with a note) becomes one `Correction`, written by its action in
the action's transaction (`correction_record`, called from `streams/actions` only: a test
reads the syntax tree, as for the audit writer). It holds the observation before and
after, the source lines (the session and the message ids it cites; the lines are read when
shown, so a forgotten speaker's words are gone with the messages), the prompt kind and
version of the job that formed the observation, the scope, the actor, the reason and time.

A correction holds memory text, so every surface reads it through
`streams.drafts.corrections` (the visibility rule); forget-user removes a user's
corrections (`corrections_forget_user`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from bson import ObjectId

from streams.core.documents import Observation, Scope, observation_origin, utcnow
from streams.core.ids import new_id
from streams.store import MemoryStore, StoreSession

CorrectionKind = Literal["edit", "delete", "private", "move", "reject"]
CORRECTION_KINDS: tuple[CorrectionKind, ...] = ("edit", "delete", "private", "move", "reject")
MAX_REASON_CHARS = 500
# Observations whose formation a prompt made: their corrections teach that prompt.
PROMPT_OF_ORIGIN = {"extraction": "extraction", "propagation": "propagation"}


@dataclass
class Correction:
    """One correction of one observation, as its action recorded it."""

    agent_id: str
    what: CorrectionKind
    observation_id: str
    scope_id: str
    scope_kind: str  # individual | group | collective | shard
    scope_label: str
    actor: str
    before: str | None
    after: str | None
    # The prompt that formed the observation (None: added by hand, imported, ...).
    prompt_kind: str | None = None
    prompt_version: int | None = None
    job_id: str | None = None
    session_id: str | None = None
    message_ids: list[str] = field(default_factory=list)
    reason: str | None = None
    target_scope_id: str | None = None  # a move's target
    target_label: str | None = None  # as extraction routes: individual, group:<name>, ...
    # Who it is about (forget-user removes it): the observation's users and the owner of
    # its individual scope (or of the move's target).
    user_ids: list[str] = field(default_factory=list)
    # The level whose prompt made the observation: its scope (extraction), or the scope
    # a propagated copy came from (propagation: the source's prompt made the copy).
    prompt_scope_id: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=new_id)
    seq: int = 0  # its number among the agent's corrections of its prompt kind

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "seq": self.seq,
            "agent_id": self.agent_id,
            "what": self.what,
            "observation_id": self.observation_id,
            "scope_id": ObjectId(self.scope_id),
            "scope_kind": self.scope_kind,
            "scope_label": self.scope_label,
            "actor": self.actor,
            "before": self.before,
            "after": self.after,
            "prompt_kind": self.prompt_kind,
            "prompt_version": self.prompt_version,
            "job_id": self.job_id,
            "session_id": self.session_id,
            "message_ids": list(self.message_ids),
            "reason": self.reason,
            "target_scope_id": self.target_scope_id,
            "target_label": self.target_label,
            "user_ids": list(self.user_ids),
            "prompt_scope_id": ObjectId(self.prompt_scope_id or self.scope_id),
            "created_at": self.created_at,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> Correction:
        return cls(
            id=str(doc["_id"]),
            agent_id=doc["agent_id"],
            what=cast(CorrectionKind, doc["what"]),
            observation_id=doc["observation_id"],
            scope_id=str(doc["scope_id"]),
            scope_kind=doc.get("scope_kind") or "individual",
            scope_label=doc.get("scope_label") or "",
            actor=doc.get("actor") or "",
            before=doc.get("before"),
            after=doc.get("after"),
            prompt_kind=doc.get("prompt_kind"),
            prompt_version=doc.get("prompt_version"),
            job_id=doc.get("job_id"),
            session_id=doc.get("session_id"),
            message_ids=list(doc.get("message_ids") or []),
            reason=doc.get("reason"),
            target_scope_id=doc.get("target_scope_id"),
            target_label=doc.get("target_label"),
            user_ids=list(doc.get("user_ids") or []),
            prompt_scope_id=str(doc.get("prompt_scope_id") or doc["scope_id"]),
            created_at=doc["created_at"],
            seq=doc.get("seq", 0),
        )


def route_label(scope: Scope) -> str:
    """The label extraction and propagation route a fact by (a check's `lands_in`)."""
    if scope.scope_type == "individual":
        return "individual"
    if scope.scope_type == "group":
        return f"group:{scope.display_name or scope.group_id}"
    return f"shard:{scope.name}" if scope.name else "collective"


def _formed_by(
    store: MemoryStore, observation: Observation
) -> tuple[str | None, int | None, str | None]:
    """(prompt kind, prompt version, job id) of what formed the observation: an extraction's
    observation names its job (`added_by` "model:<job id>"), whose result holds the
    version of the prompt it sent; a propagated copy names its prompt kind only."""
    kind = PROMPT_OF_ORIGIN.get(observation_origin(observation))
    if kind != "extraction":
        return kind, None, None
    job_id = (observation.added_by or "").removeprefix("model:")
    job = store.jobs.get(ObjectId(job_id)) if ObjectId.is_valid(job_id) else None
    if job is None:
        return kind, None, None
    version = job.result.get("prompt_version")
    return kind, version if isinstance(version, int) else None, job.id


def correction_of(
    *,
    store: MemoryStore,
    observation: Observation,
    scope: Scope,
    what: CorrectionKind,
    actor: str,
    after: str | None = None,
    reason: str | None = None,
    target: Scope | None = None,
) -> Correction:
    """The correction an action records for `observation` (as it was before the change)."""
    kind, version, job_id = _formed_by(store, observation)
    users = list(observation.related_user_ids)
    for owner in (scope, target):
        if owner is not None and owner.scope_type == "individual" and owner.user_id:
            users.append(owner.user_id)
    return Correction(
        agent_id=observation.agent_id,
        what=what,
        observation_id=observation.id,
        scope_id=scope.id,
        scope_kind=scope.kind,
        scope_label=scope.label,
        actor=actor,
        before=observation.content,
        after=after,
        prompt_kind=kind,
        prompt_version=version,
        job_id=job_id,
        session_id=observation.source_session_id,
        message_ids=list(observation.source_message_ids),
        reason=(reason or "").strip()[:MAX_REASON_CHARS] or None,
        target_scope_id=target.id if target is not None else None,
        target_label=route_label(target) if target is not None else None,
        user_ids=sorted(set(users)),
        prompt_scope_id=_prompt_scope(store, observation, kind) or scope.id,
    )


def _prompt_scope(store: MemoryStore, observation: Observation, kind: str | None) -> str | None:
    """A propagated copy's source scope (whose propagation prompt made it), else None."""
    source_id = observation.propagated_from
    if kind != "propagation" or not source_id or not ObjectId.is_valid(source_id):
        return None
    source = store.observations.get(ObjectId(source_id))
    return source.scope_id if source is not None else None


def correction_record(
    *, store: MemoryStore, corrections: list[Correction], session: StoreSession
) -> None:
    """Write an action's corrections in its transaction (actions only), each numbered
    among its agent's corrections of its prompt kind."""
    by_kind: dict[tuple[str, str | None], list[Correction]] = {}
    for c in corrections:
        by_kind.setdefault((c.agent_id, c.prompt_kind), []).append(c)
    for (agent_id, kind), group in sorted(by_kind.items(), key=lambda item: str(item[0])):
        first = store.corrections.reserve_seqs(agent_id, kind, len(group), session=session)
        for offset, c in enumerate(group):
            c.seq = first + offset
    store.corrections.insert_many([c.to_mongo() for c in corrections], session=session)


def corrections_forget_user(*, store: MemoryStore, agent_id: str, user_id: str) -> int:
    """Forget-user: the user's corrections, and the prompt checks made from them."""
    store.prompt_checks.forget_user(agent_id=agent_id, user_id=user_id)
    return store.corrections.forget_user(agent_id=agent_id, user_id=user_id)
