"""Context assembly, the hot path: the memory an agent sees on every message, as XML.

No LLM call and no cache. Two store round trips without retrieval (the caller's
visible scopes in one query by `context_key`, then the user's recent pending
observations by `_id`), five with it (the search index, the winning observations,
one batched access update). Reading the scopes on every call is the freshness
check: an operator's edit shows in the very next context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from xml.sax.saxutils import escape, quoteattr

from bson import ObjectId

from streams.documents import Observation, Scope, utcnow
from streams.embeddings import SemanticRanker
from streams.retrieval import RetrievalDecision, retrieval_decide
from streams.search import SearchHit, search_in_scopes
from streams.store import MemoryStore

RECENT_LIMIT = 10  # pending observations shown under the user's memory
RETRIEVED_LIMIT = 5
# Characters XML 1.0 does not allow at all (escaping cannot save them).
INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class ContextResult:
    xml: str
    decision: RetrievalDecision
    hits: list[SearchHit]


def context_assemble(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str,
    user_name: str | None = None,
    groups: Sequence[tuple[str, str | None]] = (),
    message: str,
    session_id: str | None = None,
    now: datetime | None = None,
    semantic: SemanticRanker | None = None,
) -> ContextResult:
    """The memory context for one message of `user_id` (in `groups`) to `agent_id`.

    `session_id` is accepted for the caller's bookkeeping; the context does not depend
    on it. Retrieved observations that are already shown as recent are not repeated.
    """
    now = now or utcnow()
    group_ids = list(dict.fromkeys(g for g, _ in groups))
    group_names = {g: name for g, name in groups if name}
    scopes = [
        s
        for s in store.visible_scopes.find(agent_id=agent_id, user_id=user_id, group_ids=group_ids)
        if s.is_active  # a paused scope (any type) is left out
    ]
    individual = next((s for s in scopes if s.scope_type == "individual"), None)
    recent = _recent_observations(store=store, scope=individual)
    known = "\n".join([*(s.consolidation or "" for s in scopes), *(o.content for o in recent)])
    decision = retrieval_decide(message=message, known_text=known)
    hits: list[SearchHit] = []
    if decision.triggered:
        hits = search_in_scopes(
            store=store,
            scopes=scopes,
            query=message,
            limit=RETRIEVED_LIMIT,
            exclude_ids=frozenset(o.id for o in recent),
            semantic=semantic,
        )
        if hits:
            store.observations.record_access([ObjectId(h.observation.id) for h in hits], now=now)
            hits = [_accessed(h, now=now) for h in hits]
    xml = context_xml(
        scopes=scopes,
        group_ids=group_ids,
        group_names=group_names,
        user_name=user_name,
        recent=recent,
        retrieved=[h.observation for h in hits],
        now=now,
    )
    return ContextResult(xml=xml, decision=decision, hits=hits)


def _recent_observations(*, store: MemoryStore, scope: Scope | None) -> list[Observation]:
    if scope is None or not scope.pending_observation_ids:
        return []
    ids = [ObjectId(i) for i in scope.pending_observation_ids[-RECENT_LIMIT:]]
    found = [o for o in store.observations.get_many(ids) if o.live]
    return sorted(found, key=lambda o: (o.observed_at, o.seq))


def _accessed(hit: SearchHit, *, now: datetime) -> SearchHit:
    """The hit as stored after this call's access update (without reading it back)."""
    observation = replace(
        hit.observation,
        access_count=hit.observation.access_count + 1,
        last_accessed_at=now,
    )
    return SearchHit(observation=observation, score=hit.score, matched_terms=hit.matched_terms)


# -- XML ---------------------------------------------------------------------------------


def context_xml(
    *,
    scopes: list[Scope],
    group_ids: list[str],
    group_names: dict[str, str],
    user_name: str | None,
    recent: list[Observation],
    retrieved: list[Observation],
    now: datetime,
) -> str:
    """The spec's XML; sections with nothing in them are left out."""
    collective = next((s for s in scopes if s.scope_type == "collective" and not s.name), None)
    shards = sorted((s for s in scopes if s.is_shard), key=lambda s: s.name or "")
    by_group = {s.group_id: s for s in scopes if s.scope_type == "group"}
    individual = next((s for s in scopes if s.scope_type == "individual"), None)
    lines = ["<MemoryContext>"]

    shard_lines = [
        f"    <Shard name={_attr(s.name or '')}>{_text(s.consolidation)}</Shard>"
        for s in shards
        if _has_text(s.consolidation)
    ]
    if (collective and _has_text(collective.consolidation)) or shard_lines:
        body = _text(collective.consolidation if collective else None)
        lines.append(f"  <CollectiveMemory>{body}")
        lines += shard_lines
        lines.append("  </CollectiveMemory>")

    for group_id in group_ids:
        scope = by_group.get(group_id)
        if scope is None or not _has_text(scope.consolidation):
            continue
        name = group_names.get(group_id) or scope.display_name or group_id
        lines.append(
            f"  <GroupMemory group={_attr(name)}>{_text(scope.consolidation)}</GroupMemory>"
        )

    if individual is not None and (_has_text(individual.consolidation) or recent):
        name = user_name or individual.display_name or individual.user_id or ""
        lines.append(f"  <UserMemory user={_attr(name)}>{_text(individual.consolidation)}")
        if recent:
            lines.append("    <RecentObservations>")
            lines += [f"      - {_bullet(o, now=now)}" for o in recent]
            lines.append("    </RecentObservations>")
        lines.append("  </UserMemory>")

    if retrieved:
        lines.append("  <RetrievedObservations>")
        lines += [f"      - {_bullet(o, now=now)}" for o in retrieved]
        lines.append("  </RetrievedObservations>")
    lines.append("</MemoryContext>")
    return "\n".join(lines)


def _has_text(value: str | None) -> bool:
    return bool(value and value.strip())


def _text(value: str | None) -> str:
    return escape(INVALID_XML.sub("", (value or "").strip()))


def _attr(value: str) -> str:
    return quoteattr(INVALID_XML.sub("", value))


def _bullet(observation: Observation, *, now: datetime) -> str:
    one_line = " ".join(observation.content.split())
    return f"{_text(one_line)} ({relative_age(observation.observed_at, now=now)})"


def relative_age(then: datetime, *, now: datetime) -> str:
    """ "just now", "5 minutes ago", "2 hours ago", "3 weeks ago"...: computed per request."""
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "just now" if seconds > -60 else "in the future"
    for unit, size in (
        ("year", 365 * 86400),
        ("month", 30 * 86400),
        ("week", 7 * 86400),
        ("day", 86400),
        ("hour", 3600),
        ("minute", 60),
    ):
        count = int(seconds // size)
        if count >= 1:
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"
