"""Context assembly, the hot path: the memory an agent sees on every message, as XML.

No LLM call and no cache. Two store round trips without retrieval (the caller's
visible scopes in one query by `context_key`, then the user's recent pending
observations by `_id`), five with it (the search index, the winning observations,
one batched access update). Reading the scopes on every call is the freshness
check: an operator's edit shows in the very next context.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bson import ObjectId

from streams.context.render import (
    ContextParts,
    context_fit,
    context_parts,
    has_text,
)
from streams.context.tokens import estimate_tokens
from streams.core.documents import Observation, Scope, utcnow
from streams.core.visibility import memory_removal
from streams.guard.erasure import erased_users, forgotten_call_record
from streams.guard.screening import screened
from streams.search.embeddings import SemanticRanker
from streams.search.index import MAX_LIMIT, SearchHit, search_in_scopes
from streams.search.ranking_settings import ranking_for_scopes
from streams.search.retrieval import RetrievalDecision, retrieval_decide
from streams.store import MemoryStore, write_behind

logger = logging.getLogger("streams.context")

RECENT_LIMIT = 10  # pending observations shown under the user's memory
SHARED_RECENT_LIMIT = 5  # ... and under each group's, the collective's and each shard's
MAX_RECENT_READ = 200  # pending observations read for one context, all sections together
RETRIEVED_LIMIT = 5
# Characters XML 1.0 does not allow at all (escaping cannot save them).
LOGGED_MESSAGE_CHARS = 2_000  # of the message, kept in the context log


@dataclass(frozen=True)
class ContextResult:
    xml: str
    decision: RetrievalDecision
    hits: list[SearchHit]
    call_id: str | None = None  # its record in the context log; None when the log is off
    dropped: list[str] = field(default_factory=list)  # what a `max_tokens` budget left out
    tokens: int = 0  # the XML's size, estimated (four characters a token)
    # What the XML quoted (`context_quotes`), for any copy of it to be scrubbed later.
    quotes: dict[str, list[str]] = field(default_factory=dict)
    # The quoted texts themselves, by observation id and by `<scope id>:<version>`: a
    # copy written later (the chat call, after the answer) checks them against removals.
    quoted_texts: dict[str, str] = field(default_factory=dict)
    # Recent observations (shown as such) that ranked in the retrieval's top
    # RETRIEVED_LIMIT: with `hits`, the context shows all of search's best.
    found_recent: list[str] = field(default_factory=list)


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
    caller: str = "",
    source: str = "context",
    max_tokens: int | None = None,
    log: bool = True,
    record_access: bool = True,
) -> ContextResult:
    """The memory context for one message of `user_id` (in `groups`) to `agent_id`.

    `session_id` is for the context log (the context does not depend on it). Retrieved
    observations that are already shown as recent are not repeated. With the log on
    (`store.context_log_days`) and `log`, the call is recorded behind the answer
    (`call_id`); `caller` names who asked (the API key), `source` which interface.
    `max_tokens`: the XML fits that many (estimated) tokens (`context_fit`).
    """
    now = now or utcnow()
    group_ids = list(dict.fromkeys(g for g, _ in groups))
    group_names = {g: name for g, name in groups if name}
    scopes = [
        _without_stale_consolidation(s)
        for s in store.visible_scopes.find(agent_id=agent_id, user_id=user_id, group_ids=group_ids)
        if s.is_active  # a paused scope (any type) is left out
    ]
    recent_by_scope = _recent_observations(store=store, scopes=scopes)
    recent = [o for found in recent_by_scope.values() for o in found]
    known = "\n".join([*(s.consolidation or "" for s in scopes), *(o.content for o in recent)])
    decision = retrieval_decide(message=message, known_text=known)
    hits: list[SearchHit] = []
    found_recent: list[str] = []
    search_ms: float | None = None
    if decision.triggered:
        started = time.perf_counter()
        hits, found_recent = _retrieve(
            store=store, scopes=scopes, message=message, recent=recent, semantic=semantic, now=now
        )
        search_ms = (time.perf_counter() - started) * 1000
        if hits and record_access:
            store.observations.record_access([ObjectId(h.observation.id) for h in hits], now=now)
            hits = [_accessed(h, now=now) for h in hits]
    parts = context_parts(
        scopes=scopes,
        group_ids=group_ids,
        group_names=group_names,
        user_name=user_name,
        recent=recent_by_scope,
        retrieved=[h.observation for h in hits],
        instruction_policy=store.instruction_policy,
    )
    xml, dropped = context_fit(parts, max_tokens=max_tokens, now=now)
    kept = {o.id for o in parts.retrieved}  # what the budget and the policy left in
    hits = [h for h in hits if h.observation.id in kept]
    quotes = context_quotes(parts, scopes)
    call_id = None
    if log:
        call_id = _log_call(
            store=store,
            agent_id=agent_id,
            user_id=user_id,
            session_id=session_id,
            group_ids=group_ids,
            message=message,
            xml=xml,
            decision=decision,
            hits=hits,
            search_ms=search_ms,
            scopes=scopes,
            caller=caller,
            source=source,
            now=now,
            extra={
                "max_tokens": max_tokens,
                "dropped": dropped,
                **quotes,
            },
        )
    return ContextResult(
        xml=xml,
        decision=decision,
        hits=hits,
        call_id=call_id,
        dropped=dropped,
        tokens=estimate_tokens(xml),
        quotes=quotes,
        quoted_texts=context_quoted_texts(parts, scopes),
        found_recent=found_recent,
    )


def _retrieve(
    *,
    store: MemoryStore,
    scopes: list[Scope],
    message: str,
    recent: list[Observation],
    semantic: SemanticRanker | None,
    now: datetime,
) -> tuple[list[SearchHit], list[str]]:
    """Search's ranking for the message: its best RETRIEVED_LIMIT not shown as recent,
    and the recent ones that ranked in its top RETRIEVED_LIMIT (shown already, so the
    context holds all of search's top hits). One ranking, as search ranks: the recent
    ones are left out after it, not before, so they do not shift the others."""
    shown = {o.id for o in recent}
    agent_id = scopes[0].agent_id if scopes else ""
    # The agent's and each scope's lifecycle switches, as search applies them.
    ranking = ranking_for_scopes(store=store, agent_id=agent_id, scopes=scopes)
    ranked = search_in_scopes(
        store=store,
        scopes=scopes,
        query=message,
        limit=RETRIEVED_LIMIT + len(shown),
        semantic=semantic,
        now=now,
        ranking=ranking,
    )
    hits = [h for h in ranked if h.observation.id not in shown][:RETRIEVED_LIMIT]
    if len(hits) < RETRIEVED_LIMIT and len(ranked) >= MAX_LIMIT:  # a great many shown
        hits = search_in_scopes(
            store=store,
            scopes=scopes,
            query=message,
            limit=RETRIEVED_LIMIT,
            exclude_ids=frozenset(shown),
            semantic=semantic,
            now=now,
            ranking=ranking,
        )
    found = [h.observation.id for h in ranked[:RETRIEVED_LIMIT] if h.observation.id in shown]
    return hits, found


def _recent_observations(
    *, store: MemoryStore, scopes: list[Scope]
) -> dict[str, list[Observation]]:
    """Per scope, its newest pending observations (the user's RECENT_LIMIT, each shared
    scope's SHARED_RECENT_LIMIT), oldest first; read in one `_id` query for all scopes.

    Private ones are shown only in the user's own memory, never in a shared section.
    """
    wanted: dict[str, list[str]] = {}
    for scope in scopes:
        limit = RECENT_LIMIT if scope.scope_type == "individual" else SHARED_RECENT_LIMIT
        if scope.pending_observation_ids:
            wanted[scope.id] = scope.pending_observation_ids[-limit:]
    ids = [ObjectId(i) for found in wanted.values() for i in found][:MAX_RECENT_READ]
    if not ids:
        return {}
    shared = {s.id for s in scopes if s.scope_type != "individual"}
    by_scope: dict[str, list[Observation]] = {}
    now = utcnow()
    for o in store.observations.get_many(ids):
        if (
            not o.current
            or memory_removal(o, now=now, shared_section=o.scope_id in shared) is not None
        ):
            continue
        by_scope.setdefault(o.scope_id, []).append(o)
    for found in by_scope.values():
        found.sort(key=lambda o: (o.observed_at, o.seq))
    return by_scope


def _log_call(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str,
    session_id: str | None,
    group_ids: list[str],
    message: str,
    xml: str,
    decision: RetrievalDecision,
    hits: list[SearchHit],
    search_ms: float | None,
    scopes: list[Scope],
    caller: str,
    source: str,
    now: datetime,
    extra: dict | None = None,
) -> str | None:
    """Queue the call's record (written behind); its id, or None with the log off.

    Never raises: the answer matters more than its record (a failure is logged and
    counted in `write_behind.failures()`). Sections' token counts are worked out when
    the log is read, from the XML kept here, so the hot path does not parse it.
    """
    if store.context_log_days <= 0:
        return None
    call_id = ObjectId()
    try:
        record = {
            "_id": call_id,
            "agent_id": agent_id,
            "user_id": user_id,
            "session_id": session_id,
            "group_ids": group_ids,
            "source": source,
            "caller": caller,
            "created_at": now,
            "expires_at": now + timedelta(days=store.context_log_days),
            "message": screened(message[:LOGGED_MESSAGE_CHARS]),
            "xml": xml,
            "tokens": estimate_tokens(xml),
            "retrieval": {"triggered": decision.triggered, "reason": decision.reason},
            "retrieved_ids": [h.observation.id for h in hits],
            "search_ms": search_ms,
            "scopes": [
                {"id": s.id, "type": s.scope_type, "observations": s.observation_count}
                for s in scopes
            ],
            **(extra or {}),
        }
        if _forgotten(store, agent_id=agent_id, user_id=user_id, scopes=scopes):
            record = forgotten_call_record(record)
        store.context_calls.record(record)
    except Exception:
        write_behind.count_failure()
        logger.exception("context %s: the log record could not be queued", call_id)
    return str(call_id)


def _without_stale_consolidation(scope: Scope) -> Scope:
    """A consolidation that still holds text removed since (a delete, an edit, marking
    private: its rebuild is pending) is left out of context until the rebuild writes the
    version without it; the scope's observations still show. The multi-host rehearsal
    found context serving a deleted observation's words for as long as the rebuild job
    waited for a worker (docs/rehearsal.md)."""
    if scope.needs_rebuild and scope.consolidation:
        return replace(scope, consolidation=None)
    return scope


def _forgotten(store: MemoryStore, *, agent_id: str, user_id: str, scopes: list[Scope]) -> bool:
    """Whether a tombstone covers the caller's user (then the log keeps ids and times
    only). A user with their own scope is not forgotten (the tombstone refuses one), so
    only a call without it reads the tombstones (one `_id` read)."""
    if any(s.scope_type == "individual" and s.user_id == user_id for s in scopes):
        return False
    return bool(erased_users(store=store, agent_id=agent_id, user_ids=[user_id]))


def context_quotes(parts: ContextParts, scopes: list[Scope]) -> dict[str, list[str]]:
    """What a logged call quoted, by id, so that removing that text later finds the
    records holding it by index (`streams.records.context_scrub`): the observations shown
    (recent and retrieved, after the budget) and the consolidation versions read
    (`<scope id>:<version>`; a section the budget dropped is listed too, harmlessly)."""
    sections = [parts.collective, *parts.shards, *parts.groups, parts.user]
    observation_ids = [o.id for s in sections if s is not None for o in s.recent]
    observation_ids += [o.id for o in parts.retrieved]
    versions = [
        f"{s.id}:{s.consolidation_version}"
        for s in scopes
        if s.consolidation_version and has_text(s.consolidation)
    ]
    return {"quoted_observation_ids": observation_ids, "quoted_versions": versions}


def context_quoted_texts(parts: ContextParts, scopes: list[Scope]) -> dict[str, str]:
    """`context_quotes` with the texts quoted: observation id or version key -> text."""
    sections = [parts.collective, *parts.shards, *parts.groups, parts.user]
    shown = [o for s in sections if s is not None for o in s.recent] + list(parts.retrieved)
    texts = {o.id: o.content for o in shown}
    for s in scopes:
        if s.consolidation_version and has_text(s.consolidation):
            texts[f"{s.id}:{s.consolidation_version}"] = s.consolidation or ""
    return texts


def _accessed(hit: SearchHit, *, now: datetime) -> SearchHit:
    """The hit as stored after this call's access update (without reading it back)."""
    observation = replace(
        hit.observation,
        access_count=hit.observation.access_count + 1,
        last_accessed_at=now,
    )
    return SearchHit(observation=observation, score=hit.score, matched_terms=hit.matched_terms)


log_context_call = _log_call  # the chat tool logs its calls as context calls too
