"""Supersession actions (issue 42): a person confirms that a newer observation replaces an
older one (a shared scope's contradiction, decided), or undoes a wrong supersession. Each
write and its audit entry commit together (`run_action`)."""

from __future__ import annotations

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Observation, utcnow
from streams.core.exceptions import NotFound
from streams.memory.supersession import supersede_check, supersede_write, unsupersede_write
from streams.records.audit import content_digest
from streams.store import MemoryStore


def do_observation_supersede(
    *, store: MemoryStore, actor: Actor, older: Observation, newer: Observation
) -> Observation:
    """`older` is replaced by `newer` (same scope, both current): 409 otherwise."""
    supersede_check(older=older, newer=newer)
    run_action(store, actor, lambda tx: supersede_in(tx, store=store, older=older, newer=newer))
    return _fresh(store, older.id)


def supersede_in(
    tx: ActionTx,
    *,
    store: MemoryStore,
    older: Observation,
    newer: Observation,
    review: bool = False,
) -> None:
    """The supersession's writes and its audit entry, in the caller's action: a person's own,
    or a review decision's (`review`: the entry says so)."""
    done = supersede_write(store=store, older=older, newer=newer, session=tx.session)
    tx.audit(
        action="observation.supersede",
        object_type="observation",
        object_id=older.id,
        agent_id=older.agent_id,
        summary={
            "superseded_by": newer.id,
            "valid_until": done.valid_until.isoformat(),
            "content": content_digest(older.content),
            "newer_content": content_digest(newer.content),
            **({"review": True} if review else {}),
        },
    )


def do_observation_unsupersede(
    *, store: MemoryStore, actor: Actor, observation: Observation
) -> Observation:
    """Undo a supersession: the observation is current again (pending if never absorbed);
    409 when it is not superseded, deleted, or its words are current elsewhere."""

    def write(tx: ActionTx) -> None:
        unsupersede_write(store=store, observation=observation, session=tx.session, now=utcnow())
        tx.audit(
            action="observation.unsupersede",
            object_type="observation",
            object_id=observation.id,
            agent_id=observation.agent_id,
            summary={
                "was_superseded_by": observation.superseded_by,
                "content": content_digest(observation.content),
            },
        )

    run_action(store, actor, write)
    return _fresh(store, observation.id)


def _fresh(store: MemoryStore, observation_id: str) -> Observation:
    found = store.observations.get(ObjectId(observation_id))
    if found is None:
        raise NotFound("observation not found")
    return found
