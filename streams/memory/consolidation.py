"""Consolidation history: committing a new version, hand edits, restores, and reads.

A commit is one transaction: the scope's text and version move forward only if
the version is still the one the caller read (a concurrent commit makes this
one a conflict, never a double), the absorbed observations leave the pending
list in the same update, and the history entry is written beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Job, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.guard.screening import WriteOrigin, screen_scope_text, screened
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.coverage import version_coverage
from streams.memory.fidelity import consolidation_fidelity
from streams.memory.pins import with_pins
from streams.records.activity import activity_record
from streams.records.webhooks import consolidation_versioned
from streams.store import MemoryStore, StoreSession

MAX_CONSOLIDATION_CHARS = 20_000
HISTORY_CHUNK = 200
WORD = re.compile(r"\S+")
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def word_count(text: str) -> int:
    """Words as the limit counts them (and the editor's live counter): runs of non-space."""
    return len(WORD.findall(text))


def within_words(text: str, limit: int) -> tuple[str, str | None]:
    """`text` if it fits `limit` words; else cut at the last sentence end that fits (at
    the limit itself when no sentence ends in time), with a warning saying so."""
    text = text.strip()
    words = word_count(text)
    if words <= limit:
        return text, None
    spans = list(WORD.finditer(text))
    head = text[: spans[limit - 1].end()]
    ends = list(SENTENCE_END.finditer(head))
    cut = head[: ends[-1].end()] if ends else head
    return cut.strip(), (
        f"the model answered {words} words twice (limit {limit}); "
        f"stored cut to {word_count(cut)} words"
    )


@dataclass(frozen=True)
class RunDetails:
    """What an LLM run records beside its text (empty for hand edits and restores)."""

    model: str | None = None
    prompt_version: int | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: int = 0
    warning: str | None = None  # shown on the version, e.g. an answer cut to the word limit
    # Pairs of the offered observations' ids the model reported contradicting (not stored
    # with the version: `streams.memory.consolidation_contradictions` flags them).
    contradictions: tuple[tuple[str, str], ...] = ()
    # Reported pairs whose texts share no subject (`pair_shares_subject`): not flagged.
    contradictions_rejected: int = 0
    # The questions asked (`streams.prompts.questions`) and the trailer's answers (None
    # per question: not stated); `answers` None with `answers_error`: the trailer was
    # malformed, so coverage is unknown (`streams.memory.coverage`).
    questions: tuple[str, ...] = ()
    answers: tuple[str | None, ...] | None = ()
    answers_error: str | None = None
    chunks: int = 0  # folds in turn (`streams.memory.consolidation_chunks`); 0: no fold


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
    rebuilt_ids: list[str] | None = None,
    newly_absorbed_ids: list[str] | None = None,
    warning: str | None = None,
    also: Callable[[StoreSession], None] | None = None,
    at: datetime | None = None,
    session: StoreSession | None = None,
) -> ConsolidationVersion:
    """Store `text` as version `expected_version + 1`; Conflict if the scope moved on.

    `absorbed_were_pending=False` for a rebuild from observations consolidated before:
    they were counted out of pending already. A rebuild names the observations it
    rebuilt without (`rebuilt_ids`, out of the scope's rebuild list in the same
    update) and redacts the old versions in `also`, inside the same transaction;
    `newly_absorbed_ids` are those of its absorbed still to mark consolidated (default all).
    `at` backdates the version (a legacy migration keeps the old `last_updated_at`).
    With `session` it all, counters included, is the caller's transaction (an action's).
    """
    now = at or utcnow()
    run = run or RunDetails()
    scope_oid = require_object_id(scope.id, what="scope")
    text, pinned = with_pins(text, scope.pins, max_words=scope.consolidation_max_words)
    # Every version passes the screen here (a model's output, a hand edit, a restore, a
    # rebuild, a migration): no secret is stored, whoever wrote the text.
    text = screened(text)
    if pinned:
        warning = f"{warning}; {pinned}" if warning else pinned
    absorbed = [ObjectId(i) for i in absorbed_ids]
    fidelity = version_fidelity(
        store=store, scope=scope, text=text, absorbed=absorbed, rebuild=not absorbed_were_pending
    )
    coverage = _coverage(store, scope_oid, expected_version, run)
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
        warning=warning,
        created_at=now,
        fidelity=fidelity,
        coverage=coverage,
    )

    def commit(session: StoreSession) -> None:
        if absorbed_were_pending:
            _absorbed_still_live(store, absorbed, session=session)
        moved = not store.scopes.commit_consolidation(
            scope_oid,
            expected_version=expected_version,
            text=text,
            absorbed_ids=absorbed,
            actor=actor,
            now=now,
            rebuilt_ids=[ObjectId(i) for i in rebuilt_ids or []],
            pins=scope.pins,
            session=session,
        )
        if moved:
            raise Conflict(
                "the consolidation moved on since it was read",
                details={"expected_version": expected_version},
            )
        marked = absorbed
        if newly_absorbed_ids is not None:
            marked = [ObjectId(i) for i in newly_absorbed_ids]
        store.observations.mark_consolidated(marked, session=session)
        store.consolidations.insert(entry, session=session)
        if also is not None:
            also(session)
        consolidation_versioned(store=store, entry=entry, session=session)

    if session is None:
        store.in_transaction(commit)
    else:
        commit(session)
    activity_record(
        store=store, agent_id=scope.agent_id, now=now, consolidations=1, session=session
    )
    if absorbed and absorbed_were_pending:
        store.agents.adjust_counters(
            scope.agent_id, now=now, pending=-len(absorbed), session=session
        )
    return entry


def _absorbed_still_live(
    store: MemoryStore, absorbed: list[ObjectId], *, session: StoreSession
) -> None:
    """Conflict when an observation the run read while pending was deleted since: the
    delete took it out of pending and flagged nothing (no version had absorbed it), so a
    version stating it would keep its words with no rebuild to come (the multi-host
    rehearsal's context quoted one). The job's retry folds what is pending then. A
    delete committing after this read conflicts with the marking below: the whole
    transaction is retried and reads it."""
    gone = store.observations.deleted_among(absorbed, session=session)
    if gone:
        raise Conflict(
            "an observation the run absorbed was deleted meanwhile; the job is retried",
            details={"deleted": [str(i) for i in gone]},
        )


def _coverage(
    store: MemoryStore, scope_oid: ObjectId, expected_version: int, run: RunDetails
) -> list[dict[str, Any]]:
    """The questions' coverage; "lost" against the version this one follows."""
    if not run.questions:
        return []
    previous = store.consolidations.get(scope_oid, expected_version) if expected_version else None
    # An answer quotes the model's memory: it passes the screen like the text itself.
    answers = None if run.answers is None else [screened(a) if a else None for a in run.answers]
    return version_coverage(
        questions=list(run.questions),
        answers=answers,
        previous=previous.coverage if previous else [],
    )


def version_fidelity(
    *, store: MemoryStore, scope: Scope, text: str, absorbed: list[ObjectId], rebuild: bool
) -> dict[str, list[str]]:
    """What `text` no longer states of the scope's current text and of the observations it
    absorbs (those a fold reads: not private, deleted or expired). A rebuild (after a
    delete, an edit, a forget: its observations were consolidated before) leaves
    sentences out on purpose: only its observations count, so no dropped sentence keeps
    a copy of what was removed."""
    weighed = [
        (o.id, o.content)
        for o in store.observations.get_many(absorbed)
        if not o.deleted and not o.private and not o.is_expired()
    ]
    previous = None if rebuild else scope.consolidation
    return consolidation_fidelity(previous=previous, text=text, absorbed=weighed).to_dict()


def consolidation_edit(
    *,
    store: MemoryStore,
    scope: Scope,
    text: str,
    expected_version: int,
    actor: str,
    origin: WriteOrigin = "operator",
    override: bool = False,
    session: StoreSession | None = None,
) -> ConsolidationVersion:
    """An operator's hand edit: a new version, refused if someone else moved it first.

    Empty is refused (the page would say "no consolidation yet" while a version
    exists), and so is a text over the scope's word limit: it is sent in every context.
    In a shared scope a text flagged `pii:*` or `instruction` is refused (`Flagged`)
    unless a person confirms it (`override`; never an API key's): `screen_scope_text`.
    """
    text = text.strip()
    if not text:
        raise InvalidInput(
            "the consolidation must not be empty", details=[{"field": "consolidation"}]
        )
    words = word_count(text)
    if words > scope.consolidation_max_words:
        raise InvalidInput(
            f"the consolidation has {words} words; this scope allows "
            f"{scope.consolidation_max_words}",
            details=[
                {
                    "field": "consolidation",
                    "words": words,
                    "max_words": scope.consolidation_max_words,
                }
            ],
        )
    if len(text) > MAX_CONSOLIDATION_CHARS:
        raise InvalidInput(
            f"the consolidation is longer than {MAX_CONSOLIDATION_CHARS} characters",
            details=[{"field": "consolidation"}],
        )
    text, _ = screen_scope_text(
        scope=scope, text=text, origin=origin, override=override, field="consolidation"
    )
    return consolidation_commit(
        store=store,
        scope=scope,
        expected_version=expected_version,
        text=text,
        absorbed_ids=[],
        trigger="hand_edit",
        actor=actor,
        session=session,
    )


def consolidation_restore(
    *,
    store: MemoryStore,
    scope: Scope,
    version: int,
    actor: str,
    follow_ups: list[Job] | None = None,
    session: StoreSession | None = None,
) -> ConsolidationVersion:
    """A new version whose text is that of an earlier one.

    What only later versions absorbed is not in the restored text: those observations
    go back to pending (the next run folds them in again), and the threshold is checked.
    A redacted version (it held text that was deleted or forgotten) cannot be restored.
    With `session` every write, and the threshold's job, is the caller's transaction.
    """
    oid = require_object_id(scope.id, what="scope")
    old = store.consolidations.get(oid, version)
    if old is None:
        raise NotFound(f"version {version} not found")
    if old.redacted:
        raise Conflict(f"version {version} was redacted; it cannot be restored")
    returning = restore_returns(store=store, scope=scope, version=version)
    entry = consolidation_commit(
        store=store,
        scope=scope,
        expected_version=scope.consolidation_version,
        text=old.text,
        absorbed_ids=[],
        trigger="restore",
        actor=actor,
        restored_from=version,
        session=session,
    )
    pending_again(store=store, scope=scope, ids=[ObjectId(i) for i in returning], session=session)
    _threshold_check(store, scope.id, follow_ups, session)
    return entry


def pending_again(
    *, store: MemoryStore, scope: Scope, ids: list[ObjectId], session: StoreSession | None
) -> None:
    """Consolidated `ids` (none pending already) back to pending: a restore, an undone private."""
    if not ids:
        return
    store.observations.mark_consolidated(ids, value=False, session=session)
    store.scopes.push_pending(ObjectId(scope.id), ids, session=session)
    store.agents.adjust_counters(scope.agent_id, now=utcnow(), pending=len(ids), session=session)


def restore_returns(*, store: MemoryStore, scope: Scope, version: int) -> list[str]:
    """The observations that go back to pending if `version` is restored: those absorbed
    only by later versions, still live and not pending already (shown before and after)."""
    oid = require_object_id(scope.id, what="scope")
    later: list[str] = []
    for low in range(version + 1, scope.consolidation_version + 1, HISTORY_CHUNK):
        high = min(low + HISTORY_CHUNK - 1, scope.consolidation_version)
        later += store.consolidations.absorbed_between(oid, low_version=low, high_version=high)
    pending = set(scope.pending_observation_ids)
    ids = [i for i in dict.fromkeys(later) if i not in pending]
    live: list[str] = []
    for start in range(0, len(ids), HISTORY_CHUNK):
        chunk = [ObjectId(i) for i in ids[start : start + HISTORY_CHUNK]]
        live += [o.id for o in store.observations.get_many(chunk) if not o.deleted]
    return live


def restore_preview(versions: list[ConsolidationVersion], pending: list[str]) -> dict[int, int]:
    """For versions listed newest first from the current one: how many observations would go
    back to pending if each were restored (absorbed by a later listed version, not pending).
    Deleted ones are left out by the restore itself; the count is what the page shows."""
    waiting = set(pending)
    later: set[str] = set()
    counts: dict[int, int] = {}
    for version in versions:
        counts[version.version] = len(later - waiting)
        later |= set(version.absorbed_observation_ids)
    return counts


def _threshold_check(
    store: MemoryStore,
    scope_id: str,
    follow_ups: list[Job] | None,
    session: StoreSession | None = None,
) -> None:
    job = consolidation_due(store=store, scope_id=scope_id, trigger="threshold", session=session)
    if job is not None and follow_ups is not None:
        follow_ups.append(job)


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
