"""Contradictions the consolidation model reports, flagged like the deterministic ones.

The consolidation prompt lists each new observation with its id
(`- [<date>] [<id>] <text>`); after the memory the model may add a line
`CONTRADICTIONS:` and one line per pair, `[<id>] [<id>]`, naming two listed
observations that give different values for the same thing. The trailer never reaches
the stored text, and only ids the prompt offered count (a model cannot name others).

Each pair is flagged `contradicts` with each other's id (`streams.core.contradictions`
does the same at write time). In a shared scope the newer waits for review
(`contradicts:<older id>`) and is left out of this consolidation: the run folds again
without it, so no version holds text that waits for a person. In an individual scope
nothing waits: both are flagged and absorbed, the newer wins. A pair a person already
decided (the newer's review has a decision) is not raised again.
"""

from __future__ import annotations

from datetime import datetime

from bson import ObjectId

from streams.core.documents import Observation
from streams.search.index import search_index_remove
from streams.store import MemoryStore, StoreSession


def contradictions_flag(
    *,
    store: MemoryStore,
    shared: bool,
    observations: list[Observation],
    pairs: list[tuple[str, str]],
    now: datetime,
) -> list[Observation]:
    """Flag each reported pair both ways; in a shared scope, the newer ones that now wait
    for review (taken out of the scope's pending list by the caller's commit)."""
    held: dict[str, Observation] = {}
    for older, newer in _open_pairs(observations, pairs):
        store.observations.add_contradiction(ObjectId(older.id), newer.id)
        store.observations.add_contradiction(ObjectId(newer.id), older.id)
        free = newer.id not in held and older.id not in held
        if shared and free and _hold(store, newer, reason=f"contradicts:{older.id}", now=now):
            held[newer.id] = newer
    return list(held.values())


def contradiction_holds(
    *, shared: bool, observations: list[Observation], pairs: list[tuple[str, str]]
) -> list[Observation]:
    """What `contradictions_flag` would hold for review, without writing (the dry run's
    contradiction pass)."""
    held: dict[str, Observation] = {}
    for older, newer in _open_pairs(observations, pairs):
        if shared and newer.id not in held and older.id not in held:
            held[newer.id] = newer
    return list(held.values())


def _open_pairs(
    observations: list[Observation], pairs: list[tuple[str, str]]
) -> list[tuple[Observation, Observation]]:
    """(older, newer) per reported pair of listed observations no person decided yet."""
    by_id = {o.id: o for o in observations}
    found = []
    for a, b in pairs:
        first, second = by_id.get(a), by_id.get(b)
        if first is None or second is None:
            continue
        older, newer = sorted((first, second), key=lambda o: (o.observed_at, o.seq, o.id))
        if (newer.review or {}).get("decision"):
            continue  # a person decided this one already: keep both, or an edit
        found.append((older, newer))
    return found


def _hold(store: MemoryStore, observation: Observation, *, reason: str, now: datetime) -> bool:
    """In one transaction: in review, out of the pending list, search and pending count
    (`streams.guard.review.observation_release` undoes each)."""
    oid = ObjectId(observation.id)

    def hold(session: StoreSession) -> bool:
        if not store.observations.hold_for_review(oid, reason=reason, now=now, session=session):
            return False
        store.scopes.pull_pending(ObjectId(observation.scope_id), [oid], session=session)
        store.agents.adjust_counters(observation.agent_id, now=now, pending=-1, session=session)
        search_index_remove(store=store, observations=[observation], session=session)
        return True

    return bool(store.in_transaction(hold))
