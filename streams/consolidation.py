"""Consolidation history: committing a new version, hand edits, restores, and reads.

A commit is one transaction: the scope's text and version move forward only if
the version is still the one the caller read (a concurrent commit makes this
one a conflict, never a double), the absorbed observations leave the pending
list in the same update, and the history entry is written beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bson import ObjectId

from streams.activity import activity_record
from streams.documents import ConsolidationVersion, Scope, utcnow
from streams.exceptions import Conflict, InvalidInput, NotFound
from streams.ids import require_object_id
from streams.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.store import MemoryStore, StoreSession

MAX_CONSOLIDATION_CHARS = 20_000


@dataclass(frozen=True)
class RunDetails:
    """What an LLM run records beside its text (empty for hand edits and restores)."""

    model: str | None = None
    prompt_version: int | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: int = 0


def consolidation_commit(
    *,
    store: MemoryStore,
    scope: Scope,
    expected_version: int,
    text: str,
    absorbed_ids: list[str],
    trigger: str,
    actor: str | None,
    run: RunDetails | None = None,
    restored_from: int | None = None,
    absorbed_were_pending: bool = True,
) -> ConsolidationVersion:
    """Store `text` as version `expected_version + 1`; Conflict if the scope moved on.

    `absorbed_were_pending=False` for a rebuild from observations consolidated before
    (forget user): they were counted out of pending already.
    """
    now = utcnow()
    run = run or RunDetails()
    scope_oid = require_object_id(scope.id, what="scope")
    absorbed = [ObjectId(i) for i in absorbed_ids]
    entry = ConsolidationVersion(
        scope_id=scope.id,
        agent_id=scope.agent_id,
        version=expected_version + 1,
        text=text,
        trigger=trigger,
        actor=actor,
        absorbed_observation_ids=absorbed_ids,
        model=run.model,
        prompt_version=run.prompt_version,
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        duration_ms=run.duration_ms,
        restored_from=restored_from,
        created_at=now,
    )

    def commit(session: StoreSession) -> None:
        moved = not store.scopes.commit_consolidation(
            scope_oid,
            expected_version=expected_version,
            text=text,
            absorbed_ids=absorbed,
            actor=actor,
            now=now,
            session=session,
        )
        if moved:
            raise Conflict(
                "the consolidation moved on since it was read",
                details={"expected_version": expected_version},
            )
        store.observations.mark_consolidated(absorbed, session=session)
        store.consolidations.insert(entry, session=session)

    store.in_transaction(commit)
    activity_record(store=store, agent_id=scope.agent_id, now=now, consolidations=1)
    if absorbed and absorbed_were_pending:
        store.agents.adjust_counters(scope.agent_id, now=now, pending=-len(absorbed))
    return entry


def consolidation_edit(
    *, store: MemoryStore, scope: Scope, text: str, expected_version: int, actor: str
) -> ConsolidationVersion:
    """An operator's hand edit: a new version, refused if someone else moved it first."""
    text = text.strip()
    if len(text) > MAX_CONSOLIDATION_CHARS:
        raise InvalidInput(
            f"the consolidation is longer than {MAX_CONSOLIDATION_CHARS} characters",
            details=[{"field": "consolidation"}],
        )
    return consolidation_commit(
        store=store,
        scope=scope,
        expected_version=expected_version,
        text=text,
        absorbed_ids=[],
        trigger="hand_edit",
        actor=actor,
    )


def consolidation_restore(
    *, store: MemoryStore, scope: Scope, version: int, actor: str
) -> ConsolidationVersion:
    """A new version whose text is that of an earlier one."""
    old = store.consolidations.get(require_object_id(scope.id, what="scope"), version)
    if old is None:
        raise NotFound(f"version {version} not found")
    return consolidation_commit(
        store=store,
        scope=scope,
        expected_version=scope.consolidation_version,
        text=old.text,
        absorbed_ids=[],
        trigger="restore",
        actor=actor,
        restored_from=version,
    )


def consolidation_history(
    *, store: MemoryStore, scope: Scope, cursor: str | None = None, limit: int | None = None
) -> Page[ConsolidationVersion]:
    """The scope's versions, newest first."""
    page_size = clamp_limit(limit)
    position = decode_cursor(cursor, required_keys=("below",))
    below = int(position["below"]) if position else scope.consolidation_version + 1
    if below < 1:
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    items = store.consolidations.page(
        scope_id=require_object_id(scope.id, what="scope"), below_version=below, limit=page_size
    )
    lowest = below - page_size
    next_cursor = encode_cursor({"below": lowest}) if lowest > 1 else None
    return Page(items=items, next_cursor=next_cursor)
