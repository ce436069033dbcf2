"""Replay: the context as it would have been at a past time, computed from history.

Never from a cache of old answers. For each scope the caller sees that existed then:
the consolidation version current at that time, and the observations that were pending
then (created by then, and either still pending or absorbed by a later version); a
search, if the message calls for one, over the observations created by then.

Replay never shows what support staff took out (domain.md, "Replay"): a deleted,
forgotten or private observation is left out whatever its state then, an observation
corrected since shows its corrected text, and a version whose text a later rebuild
redacted is replaced by the newest unredacted version before it, with the still-live
observations the redacted versions absorbed (up to that time) shown as recent ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bson import ObjectId

from streams.context.assemble import (
    RECENT_LIMIT,
    RETRIEVED_LIMIT,
    SHARED_RECENT_LIMIT,
    ContextResult,
)
from streams.context.render import context_fit, context_parts
from streams.context.tokens import estimate_tokens
from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import InvalidInput
from streams.search.embeddings import SemanticRanker
from streams.search.index import SearchHit, search_in_scopes
from streams.search.retrieval import retrieval_decide
from streams.store import MemoryStore

MAX_IDS_PER_SCOPE = 2_000  # candidates read for one scope's pending-then list


def context_replay(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str,
    user_name: str | None = None,
    groups: Sequence[tuple[str, str | None]] = (),
    message: str,
    as_of: datetime,
    max_tokens: int | None = None,
    semantic: SemanticRanker | None = None,
    now: datetime | None = None,
) -> ContextResult:
    """The context `context_assemble` would have answered at `as_of` (ages relative to it).

    InvalidInput for a time in the future or before the agent existed. Not logged and
    counts no access: it is a look back, not a call of the agent's.
    """
    now = now or utcnow()
    if as_of > now:
        raise InvalidInput("as_of is in the future", details=[{"field": "as_of"}])
    agent = store.agents.get(agent_id)
    if agent is None or as_of < agent.created_at:
        raise InvalidInput("as_of is before the agent existed", details=[{"field": "as_of"}])
    group_ids = list(dict.fromkeys(g for g, _ in groups))
    group_names = {g: name for g, name in groups if name}
    scopes, recent = _scopes_then(store, agent_id, user_id, group_ids, as_of)
    shown = [o for found in recent.values() for o in found]
    known = "\n".join([*(s.consolidation or "" for s in scopes), *(o.content for o in shown)])
    decision = retrieval_decide(message=message, known_text=known)
    hits = (
        _retrieved_then(store, scopes, message, shown, semantic, as_of)
        if decision.triggered
        else []
    )
    parts = context_parts(
        scopes=scopes,
        group_ids=group_ids,
        group_names=group_names,
        user_name=user_name,
        recent=recent,
        retrieved=[h.observation for h in hits],
        instruction_policy=store.instruction_policy,
    )
    xml, dropped = context_fit(parts, max_tokens=max_tokens, now=as_of)
    kept = {o.id for o in parts.retrieved}
    hits = [h for h in hits if h.observation.id in kept]
    return ContextResult(
        xml=xml, decision=decision, hits=hits, dropped=dropped, tokens=estimate_tokens(xml)
    )


def _scopes_then(
    store: MemoryStore, agent_id: str, user_id: str, group_ids: list[str], as_of: datetime
) -> tuple[list[Scope], dict[str, list[Observation]]]:
    """The scopes the user saw at `as_of`, as they were then, and each one's recent
    pending observations of then."""
    scopes: list[Scope] = []
    recent: dict[str, list[Observation]] = {}
    visible = store.visible_scopes.find(agent_id=agent_id, user_id=user_id, group_ids=group_ids)
    for scope in visible:
        if not scope.is_active or scope.created_at > as_of:
            continue
        then, pending_ids = _scope_then(store=store, scope=scope, as_of=as_of)
        scopes.append(then)
        limit = RECENT_LIMIT if scope.scope_type == "individual" else SHARED_RECENT_LIMIT
        found = _live_then(store=store, ids=pending_ids, as_of=as_of)
        if found:
            recent[scope.id] = found[-limit:]
    return scopes, recent


def _retrieved_then(
    store: MemoryStore,
    scopes: list[Scope],
    message: str,
    shown: list[Observation],
    semantic: SemanticRanker | None,
    as_of: datetime,
) -> list[SearchHit]:
    """What retrieval found then: observations that existed at `as_of`, not private."""
    return [
        h
        for h in search_in_scopes(
            store=store,
            scopes=scopes,
            query=message,
            limit=RETRIEVED_LIMIT * 3,
            exclude_ids=frozenset(o.id for o in shown),
            semantic=semantic,
            observed_before=as_of,
            as_of=as_of,
        )
        if h.observation.created_at <= as_of and not h.observation.private
    ][:RETRIEVED_LIMIT]


def _scope_then(*, store: MemoryStore, scope: Scope, as_of: datetime) -> tuple[Scope, list[str]]:
    """The scope with its consolidation text at `as_of`, and the ids pending then
    (candidates: `_live_then` checks each)."""
    oid = ObjectId(scope.id)
    version = store.consolidations.current_at(oid, as_of)
    text: str | None = None
    low_absorbed = 0  # versions after this one absorbed what was pending at `as_of`
    pending: list[str] = []
    if version is not None:
        low_absorbed = version.version
        if version.redacted:
            clean = store.consolidations.current_at(oid, as_of, unredacted=True)
            start = clean.version if clean is not None else 0
            text = clean.text if clean is not None else None
            # What the redacted versions absorbed: shown as recent, if it is still live.
            pending += store.consolidations.absorbed_between(
                oid, low_version=start + 1, high_version=version.version
            )[-MAX_IDS_PER_SCOPE:]
        else:
            text = version.text
    if scope.consolidation_version > low_absorbed:
        later = store.consolidations.absorbed_between(
            oid,
            low_version=low_absorbed + 1,
            high_version=min(scope.consolidation_version, low_absorbed + MAX_IDS_PER_SCOPE),
        )
        pending += later[:MAX_IDS_PER_SCOPE]
    pending += scope.pending_observation_ids[:MAX_IDS_PER_SCOPE]
    then = replace(scope, consolidation=text, consolidation_version=low_absorbed)
    return then, list(dict.fromkeys(pending))


def _live_then(*, store: MemoryStore, ids: list[str], as_of: datetime) -> list[Observation]:
    """Those created by `as_of`, never since deleted or made private, and not superseded
    by then, oldest first."""
    if not ids:
        return []
    found = store.observations.get_many([ObjectId(i) for i in ids if ObjectId.is_valid(i)])
    live = [
        o
        for o in found
        if o.created_at <= as_of
        and not o.deleted
        and not o.private
        and not o.is_expired(as_of)
        and (o.valid_until is None or o.valid_until > as_of)  # superseded later: true then
    ]
    return sorted(live, key=lambda o: (o.observed_at, o.seq))
