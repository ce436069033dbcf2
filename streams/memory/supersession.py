"""Superseded facts (issue 42): a confirmed contradiction replaces the older observation.

"Dan lives in Porto." then "Dan lives in Lisbon.": once the contradiction is confirmed
(in a user's own scope at once, newer wins; in a shared scope when a person decides),
the older one gets `superseded_by` (the newer's id) and `valid_until` (the newer's
observed time). It is not removed: the log, the scope page's chain and `as_of` still
show it (true until then). It is not current: it leaves the pending list (consolidation
folds only the current fact, a rebuild leaves it out), and context and search leave it
out (search's `include_superseded` shows it, marked). A person can undo a wrong one.

A chain never loops: only a current observation may supersede, and only a current one
may be superseded; the write touches the newer one too, so two crossing supersessions
in concurrent transactions conflict and one is retried (then refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bson import ObjectId

from streams.core.documents import Observation, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.search.dedup import text_key
from streams.store import MemoryStore, StoreSession
from streams.store.observation_supersession import MAX_CHAIN

ENABLED = (
    True  # the benchmark's switch (`python -m benchmarks retrieval_quality --no-supersession`)
)


@dataclass(frozen=True)
class Superseded:
    older_id: str
    newer_id: str
    valid_until: datetime
    was_pending: bool


def supersede_check(*, older: Observation | None, newer: Observation | None) -> None:
    """Bad input is a 409 (or 422): what cannot be superseded, or by what."""
    if older is None or newer is None:
        raise NotFound("observation not found")
    if older.id == newer.id:
        raise InvalidInput("an observation cannot supersede itself", details=[{"field": "by"}])
    if older.scope_id != newer.scope_id:
        raise InvalidInput(
            "only an observation of the same scope supersedes", details=[{"field": "by"}]
        )
    if older.deleted or newer.deleted:
        raise Conflict("a deleted observation cannot supersede or be superseded")
    if older.superseded or newer.superseded:
        raise Conflict("the observation is superseded already (a chain never loops)")
    if older.held or newer.held:
        raise Conflict("an observation that waits for review cannot supersede or be superseded")


def supersede_write(
    *,
    store: MemoryStore,
    older: Observation,
    newer: Observation,
    session: StoreSession,
    now: datetime | None = None,
) -> Superseded:
    """In the caller's transaction: the older one superseded, out of the pending list and
    the pending count. Conflict when either is no longer current (a concurrent change)."""
    supersede_check(older=older, newer=newer)
    newer_oid = ObjectId(newer.id)
    # The newer one must still be current when this commits: a conditional write on it
    # (two crossing supersessions conflict here instead of forming a loop).
    touched = store.observations.flag_current(newer_oid, contradicts=older.id, session=session)
    valid_until = max(newer.observed_at, older.observed_at)
    scope_oid = ObjectId(older.scope_id)
    if not touched or not store.observations.mark_superseded(
        ObjectId(older.id),
        scope_id=scope_oid,
        by=newer_oid,
        valid_until=valid_until,
        session=session,
    ):
        raise Conflict("the observation is no longer current (deleted or superseded)")
    was_pending = store.scopes.pull_pending(scope_oid, [ObjectId(older.id)], session=session) > 0
    if was_pending:
        store.agents.adjust_counters(
            older.agent_id, now=now or utcnow(), pending=-1, session=session
        )
    return Superseded(
        older_id=older.id, newer_id=newer.id, valid_until=valid_until, was_pending=was_pending
    )


def unsupersede_write(
    *, store: MemoryStore, observation: Observation, session: StoreSession, now: datetime
) -> bool:
    """Undo: current again (pending again when it was never absorbed). Conflict when it is
    not superseded, deleted, or its words are held by another current observation."""
    if observation.deleted:
        raise Conflict("a deleted observation cannot be restored")
    if not observation.superseded:
        raise Conflict("the observation is not superseded")
    key = text_key(observation.scope_id, observation.content)
    if not store.observations.unmark_superseded(observation, text_key=key, session=session):
        raise Conflict("the observation is not superseded (any more)")
    if not observation.consolidated and not observation.held:
        oid = ObjectId(observation.id)
        store.scopes.push_pending(ObjectId(observation.scope_id), [oid], session=session)
        store.agents.adjust_counters(observation.agent_id, now=now, pending=1, session=session)
    return True


def supersession_chain(*, store: MemoryStore, observation: Observation) -> list[Observation]:
    """The chain through `observation`, oldest first: what it replaced (back in time, the
    first one each step) and what replaced it (forward). Bounded (`MAX_CHAIN`)."""
    back: list[Observation] = []
    seen = {observation.id}
    step = [ObjectId(observation.id)]
    while step and len(back) < MAX_CHAIN:
        earlier = [o for o in store.observations.superseded_by_ids(step) if o.id not in seen]
        seen.update(o.id for o in earlier)
        back = sorted(earlier, key=lambda o: o.observed_at) + back
        step = [ObjectId(o.id) for o in earlier]
    forward: list[Observation] = []
    current = observation
    while current.superseded_by and len(forward) < MAX_CHAIN:
        nxt = store.observations.get(require_object_id(current.superseded_by, what="observation"))
        if nxt is None or nxt.id in seen:
            break
        seen.add(nxt.id)
        forward.append(nxt)
        current = nxt
    return [*back, observation, *forward]


def supersede_replaced(
    *,
    store: MemoryStore,
    pairs: list[tuple[Observation, str]],
    session: StoreSession,
    now: datetime,
) -> list[Superseded]:
    """The append's newer-wins step in a user's own scope: each (new observation, stored
    id it contradicts) supersedes the stored one when that one is current and observed no
    later (an older report arriving late does not replace a newer fact: both stay
    flagged). Skipped, not refused, where the pair does not qualify."""
    if not ENABLED or not pairs:
        return []
    stored = {o.id: o for o in store.observations.get_many([ObjectId(i) for _, i in pairs])}
    done: list[Superseded] = []
    for newer, older_id in pairs:
        older = stored.get(older_id)
        if older is None or older.observed_at > newer.observed_at:
            continue
        try:
            supersede_check(older=older, newer=newer)
        except (Conflict, InvalidInput, NotFound):
            continue
        done.append(
            supersede_write(store=store, older=older, newer=newer, session=session, now=now)
        )
        stored.pop(older_id)  # superseded now: a second pair naming it waits
    return done


def replaced_on_page(*, store: MemoryStore, observations: list[Observation]) -> dict[str, list]:
    """Per observation of a log page, the ones it replaced (oldest first): the scope page
    shows each current fact's chain under it. One indexed read per page."""
    ids = [ObjectId(o.id) for o in observations if not o.deleted]
    replaced: dict[str, list[Observation]] = {}
    for older in store.observations.superseded_by_ids(ids, limit=8 * max(1, len(ids))):
        replaced.setdefault(str(older.superseded_by), []).append(older)
    for chain in replaced.values():
        chain.sort(key=lambda o: o.observed_at)
    return replaced
