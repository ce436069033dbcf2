"""Consolidation runs: one LLM call folds a scope's pending observations into its text.

Safe under failure and concurrency. A lease in the scope document keeps two
runs of one scope from working at once; the commit carries the version it read
(`consolidation_commit`), so even a run whose lease expired cannot commit over
another. Pending ids leave the pending list only in that commit: an LLM error,
a timeout, a malformed answer or a killed worker leaves the scope as it was,
and observations that arrive during a run stay pending for the next one.

Long because: one run's steps (lease, chunked folds, contradiction pass, commit, job result)
share the run's state and read in the order they happen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Observation, Scope, utcnow
from streams.core.exceptions import NotFound
from streams.jobs import JobRun, job_create, scope_lease_take
from streams.llm.answers_trailer import answers_split
from streams.llm.contradiction_answer import answer_split
from streams.llm.port import (
    ConsolidationContext,
    DatedObservation,
    LLMError,
    LLMRequest,
    LLMResult,
)
from streams.memory.answer_checks import (
    DEFAULT_FIDELITY_FLOOR,
    AnswerRefused,
    consolidation_answer_check,
    pair_shares_subject,
)
from streams.memory.consolidation import (
    RunDetails,
    consolidation_commit,
    within_words,
    word_count,
)
from streams.memory.consolidation_chunks import DEFAULT_CHUNK_TOKENS, chunk_plan, chunks_merged
from streams.memory.consolidation_contradictions import contradictions_flag
from streams.memory.coverage import coverage_lost, coverage_summary
from streams.memory.requests import consolidation_request, consolidation_retry
from streams.memory.scope_limits import scope_limits
from streams.prompts import Draft, resolve_template
from streams.prompts.questions import questions_in_effect
from streams.prompts.resolver import PromptPart
from streams.store import MemoryStore

LEASE = timedelta(minutes=5)


def consolidation_run(
    *,
    store: MemoryStore,
    run: JobRun,
    lease: timedelta = LEASE,
    fidelity_floor: float = DEFAULT_FIDELITY_FLOOR,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    after_chunk: Callable[[int], None] | None = None,
) -> None:
    """The work of a consolidation job; an answer the checks refuse fails it
    (`streams.memory.answer_checks`): nothing is committed, pending stays pending.

    A pending set beyond `chunk_tokens` folds in chunks into one version; `after_chunk`
    is called with each chunk's number once it is folded (the lease is renewed there)."""
    job = run.job
    assert job.scope_id is not None
    scope_oid = ObjectId(job.scope_id)
    # Its own lease back at once after a takeover; Conflict (fail, retry) while another
    # live run holds it: never `succeeded` for work it did not do.
    if not scope_lease_take(store=store, run=run, scope_id=job.scope_id, lease=lease):
        raise NotFound("scope not found")

    taken = [utcnow()]

    def chunk_folded(number: int) -> None:
        # A long chunked run keeps its lease, renewed once half of it is spent (a write to
        # a scope of 5,000 pending ids re-indexes them all: 1.5 s on the embedded store).
        # Safety still comes from the commit's version check.
        now = utcnow()
        if now - taken[0] > lease / 2:
            store.scopes.take_back_lease(scope_oid, owner=job.id, until=now + lease)
            taken[0] = now
        if after_chunk is not None:
            after_chunk(number)

    try:
        scope = store.scopes.get(scope_oid)
        if scope is None:
            raise NotFound("scope not found")
        if not scope.is_active:
            run.result = {"absorbed": 0, "note": "the scope is paused"}
            return
        chunking = Chunking(tokens=chunk_tokens, after_chunk=chunk_folded)
        _consolidate(store, run, scope, fidelity_floor, chunking)
    finally:
        store.scopes.release_lease(scope_oid, owner=job.id)


def _consolidate(
    store: MemoryStore, run: JobRun, scope: Scope, floor: float, chunking: Chunking
) -> None:
    pending_ids = list(scope.pending_observation_ids)
    if not pending_ids:
        run.result = {"absorbed": 0, "note": "nothing pending"}
        return
    live, folded = consolidation_inputs(store=store, scope=scope)

    def hold(pairs: list[tuple[str, str]]) -> list[Observation]:
        return contradictions_flag(
            store=store,
            shared=scope.scope_type != "individual",
            observations=folded,
            pairs=pairs,
            now=utcnow(),
        )

    try:
        text, details, reported, held = consolidation_pass(
            store=store,
            llm=run.llm,
            scope=scope,
            folded=folded,
            hold=hold,
            floor=floor,
            chunking=chunking,
        )
    except AnswerRefused as exc:
        # Counted per model and prompt version (`streams.records.usage`); the job's
        # error says why, and the scope page shows it.
        run.result = {"absorbed": 0, "outcome": "refused", "refused": exc.code}
        run.result |= {"reason": str(exc), "prompt_version": exc.prompt_version or 0}
        raise
    if held:
        waiting = {o.id for o in held}
        live = [o for o in live if o.id not in waiting]
        pending_ids = [i for i in pending_ids if i not in waiting]
        scope = store.scopes.get(ObjectId(scope.id)) or scope
    entry = consolidation_commit(
        store=store,
        scope=scope,
        expected_version=scope.consolidation_version,
        text=text,
        absorbed_ids=pending_ids,
        trigger=run.job.trigger or "manual",
        actor=run.job.actor,
        run=details,
        warning=details.warning,
    )
    run.result = _run_result(entry, details, live, folded, reported, held, chunking)
    if _propagates(scope, live):
        run.follow_ups.append(
            job_create(
                store=store,
                kind="propagation",
                agent_id=scope.agent_id,
                scope_id=scope.id,
                trigger="consolidation",
                payload={"version": entry.version},
            )
        )


def _run_result(
    entry: ConsolidationVersion,
    details: RunDetails,
    live: list[Observation],
    folded: list[Observation],
    reported: list[tuple[str, str]],
    held: list[Observation],
    chunking: Chunking,
) -> dict[str, Any]:
    """What the job's result says of a committed run: what it absorbed, in how many
    chunks, at what cost, and what it found on the way."""
    return {
        "absorbed": len(live),
        "contradictions": [list(pair) for pair in reported],
        "contradictions_rejected": details.contradictions_rejected,
        "fidelity": entry.fidelity,
        "fidelity_weighed": len(folded) - len(held),
        "fidelity_unstated": len((entry.fidelity or {}).get("unstated_observation_ids", [])),
        "held_for_review": sorted(o.id for o in held),
        "version": entry.version,
        "model": details.model,
        "prompt_tokens": details.prompt_tokens,
        "completion_tokens": details.completion_tokens,
        "prompt_version": details.prompt_version or 0,  # v0: the code default
        "chunks": details.chunks,
        "chunk_tokens": chunking.tokens,
        **_coverage_result(entry.coverage, details),
    }


def _coverage_result(coverage: list[dict[str, Any]], details: RunDetails) -> dict[str, Any]:
    """What the job's result says of the questions: counts, the lost ones, and "unknown"
    with why when the trailer was malformed (nothing is guessed)."""
    if not coverage:
        return {}
    found: dict[str, Any] = {"coverage": coverage_summary(coverage)}
    if details.answers is None:
        found["coverage_unknown"] = details.answers_error or "the trailer was malformed"
    if lost := coverage_lost(coverage):
        found["coverage_lost"] = lost
    return found


def consolidation_inputs(
    *, store: MemoryStore, scope: Scope
) -> tuple[list[Observation], list[Observation]]:
    """The scope's live pending observations, oldest first, and those a fold reads.

    Private observations stay in the log (and the scope's own search), never in the
    consolidation text: that text is the scope's summary, sent in every context.
    """
    observations = store.observations.get_many([ObjectId(i) for i in scope.pending_observation_ids])
    # Superseded ones left the pending list; one still there (a race) is not folded.
    live = sorted(
        (o for o in observations if not o.deleted and not o.superseded), key=lambda o: o.observed_at
    )
    return live, [o for o in live if not o.private and not o.is_expired()]


@dataclass(frozen=True)
class Chunking:
    """How a pass cuts a large pending set (`streams.memory.consolidation_chunks`)."""

    tokens: int = DEFAULT_CHUNK_TOKENS  # prompt tokens per call
    after_chunk: Callable[[int], None] | None = None  # called with each chunk's number


def consolidation_pass(
    *,
    store: MemoryStore,
    llm: Completes,
    scope: Scope,
    folded: list[Observation],
    hold: Callable[[list[tuple[str, str]]], list[Observation]],
    draft: Draft | None = None,
    asked: list[LLMRequest] | None = None,
    floor: float = DEFAULT_FIDELITY_FLOOR,
    chunking: Chunking | None = None,
    model: str | None = None,
) -> tuple[str, RunDetails, list[tuple[str, str]], list[Observation]]:
    """The folds, chunk after chunk, each into the text the one before left: the text,
    the details of all (`chunks_merged`), the pairs the answers reported and the
    observations `hold` keeps out for a person. Nothing is stored: a failed chunk leaves
    the scope as it was, and the caller commits once."""
    chunking = chunking or Chunking()
    plan = chunk_plan(
        store=store, scope=scope, observations=folded, budget=chunking.tokens, draft=draft
    )
    text = scope.consolidation or ""
    runs: list[RunDetails] = []
    reported: list[tuple[str, str]] = []
    held: list[Observation] = []
    fold = partial(
        consolidation_fold,
        store=store,
        llm=llm,
        scope=scope,
        draft=draft,
        asked=asked,
        floor=floor,
        model=model,
    )
    for number, chunk in enumerate(plan.chunks, start=1):
        text, details, pairs, waiting = _chunk_pass(fold, text or None, chunk, hold)
        runs.append(details)
        reported += pairs
        held += waiting
        if chunking.after_chunk is not None:
            chunking.after_chunk(number)
    return text, chunks_merged(runs), reported, held


def _chunk_pass(
    fold: Callable[..., tuple[str, RunDetails]],
    current: str | None,
    folded: list[Observation],
    hold: Callable[[list[tuple[str, str]]], list[Observation]],
) -> tuple[str, RunDetails, list[tuple[str, str]], list[Observation]]:
    """One chunk's fold, then its contradiction pass. The newer of a reported pair that
    waits is left out of this version: one more call (what that answer reports is not
    raised again). The run's `hold` flags and holds; the dry run's only says what would
    be held."""
    text, details = fold(current=current, observations=folded)
    reported = list(details.contradictions)
    rejected = details.contradictions_rejected
    held = hold(reported)
    if held:
        waiting = {o.id for o in held}
        text, details = fold(
            current=current, observations=[o for o in folded if o.id not in waiting]
        )
        details = replace(details, contradictions_rejected=rejected)
    return text, details, reported, held


def consolidation_fold(
    *,
    store: MemoryStore,
    llm: Completes,
    scope: Scope,
    current: str | None,
    observations: list[Observation],
    draft: Draft | None = None,
    asked: list[LLMRequest] | None = None,
    floor: float = DEFAULT_FIDELITY_FLOOR,
    model: str | None = None,
) -> tuple[str, RunDetails]:
    """One consolidation call: `observations` (oldest first) folded into `current`.

    Nothing to fold gives `current` back unchanged, without a call. Stores nothing:
    the caller commits the text with the version it started from. The dry run passes
    its `draft` and reads the requests sent back from `asked`.
    """
    if not observations:
        return current or "", RunDetails()
    template, questions, request = _fold_request(
        store=store, scope=scope, current=current, observations=observations, draft=draft
    )
    if model is not None:  # a dry run's second model, side by side
        request = replace(request, model=model)
    limit = scope.consolidation_max_words
    offered = [o.id for o in observations]
    sent = asked if asked is not None else []
    answers = [_ask(llm, request, sent)]
    read = answers_split(answers[0].text, len(questions))
    memory, pairs = answer_split(read.memory, offered)
    words = word_count(memory)
    if words > limit:
        # Once more, with the overshoot stated; then cut at the last sentence that fits.
        retry = consolidation_retry(request, words=words, limit=limit)
        answers.append(_ask(llm, retry, sent))
        read = answers_split(answers[-1].text, len(questions))
        memory, pairs = answer_split(read.memory, offered)
    text, warning = within_words(memory, limit)
    try:
        consolidation_answer_check(
            answer=memory,
            text=text,
            template=template.text,
            previous=current,
            absorbed=[(o.id, o.content) for o in observations],
            floor=floor,
            limit=limit,
        )
    except AnswerRefused as exc:
        exc.prompt_version = template.version
        raise
    by_id = {o.id: o.content for o in observations}
    about_one_thing = [p for p in pairs if pair_shares_subject(by_id[p[0]], by_id[p[1]])]
    return text, _run_details(answers, template, warning, pairs, about_one_thing, questions, read)


def _run_details(
    answers: list[LLMResult],
    template: PromptPart,
    warning: str | None,
    pairs: list[tuple[str, str]],
    about_one_thing: list[tuple[str, str]],
    questions: list[str],
    read: Any,
) -> RunDetails:
    return RunDetails(
        chunks=1,
        model=answers[-1].model,
        prompt_version=template.version,
        prompt_tokens=sum(a.prompt_tokens for a in answers),
        completion_tokens=sum(a.completion_tokens for a in answers),
        duration_ms=sum(a.duration_ms for a in answers),
        warning=warning,
        contradictions=tuple(about_one_thing),
        contradictions_rejected=len(pairs) - len(about_one_thing),
        questions=tuple(questions),
        answers=None if read.answers is None else tuple(read.answers),
        answers_error=read.error,
    )


def _fold_request(
    *,
    store: MemoryStore,
    scope: Scope,
    current: str | None,
    observations: list[Observation],
    draft: Draft | None,
) -> tuple[PromptPart, list[str], LLMRequest]:
    """The template, the questions and the request of one fold, with the scope's model."""
    template = resolve_template(
        store=store, agent_id=scope.agent_id, kind="consolidation", scope=scope, draft=draft
    )
    questions = questions_in_effect(store=store, scope=scope).questions
    context = ConsolidationContext(
        scope_description=describe_scope(scope),
        current=current,
        observations=[DatedObservation(o.content, o.observed_at, o.id) for o in observations],
        max_words=scope.consolidation_max_words,
        questions=questions,
    )
    model = scope_limits(store=store, scope=scope).consolidation_model.named_model
    request = consolidation_request(template=template.text, context=context, model=model)
    return template, questions, request


class Completes(Protocol):
    """What a fold calls: a job's counting LLM, or the provider itself in a dry run."""

    def complete(self, request: LLMRequest) -> LLMResult: ...


def _ask(llm: Completes, request: LLMRequest, sent: list[LLMRequest]) -> LLMResult:
    sent.append(request)
    answer = llm.complete(request)
    if not answer.text.strip():
        raise LLMError("the consolidation answer is empty")
    return answer


def _propagates(scope: Scope, absorbed: list[Observation]) -> bool:
    if not scope.is_active:
        return False
    if not any(not o.private for o in absorbed):
        return False
    if scope.scope_type == "individual":
        return bool(scope.groups)
    return scope.scope_type == "group"


def describe_scope(scope: Scope) -> str:
    if scope.scope_type == "individual":
        return f"individual memory of {scope.label}"
    if scope.scope_type == "group":
        return f"memory of the group {scope.label}"
    if scope.is_shard:
        return f"collective memory shard '{scope.name}' of the agent"
    return "collective memory of the agent (lessons that hold for all users)"
