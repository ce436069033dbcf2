"""One input of a prompt experiment, run on one side (the draft, or the prompt in effect).

Each side goes through the code of the real run: `session_plan` and `extraction_request`
for a session, `consolidation_fold` for a pending set, `propagation_plan` for a version's
absorbed observations. Each is a read and a model call; nothing is stored. A side's
outcome is a plain dict (it is kept in the experiment's document):

    {"text", "error", "items": [{"scope", "content"}], "stored", "flags", "duplicates",
     "words", "fidelity": {"weighed", "unstated", "dropped_sentences"} | None,
     "coverage": {"answered", "unanswered", "lost", "unknown"} | None,
     "prompt_tokens", "completion_tokens", "cost_micro_usd", "model", "calls"}
"""

from __future__ import annotations

import math
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from bson import ObjectId

from streams.core.documents import Observation, Scope
from streams.drafts.dry_run import scope_label, session_plan
from streams.guard.detectors import detect
from streams.llm.port import LLMError, LLMProvider, LLMRequest, LLMResult
from streams.memory.consolidation import word_count
from streams.memory.consolidation_runs import consolidation_fold
from streams.memory.coverage import coverage_summary, version_coverage
from streams.memory.extraction_answer import parse_extraction
from streams.memory.fidelity import consolidation_fidelity
from streams.memory.propagation import propagation_copies, propagation_plan
from streams.memory.requests import extraction_request
from streams.memory.scopes import ScopeKey
from streams.prompts import Draft
from streams.records.usage import price_of
from streams.search.dedup import text_key
from streams.store import MemoryStore

CHARS_PER_TOKEN = 4
MAX_KEPT_TEXT = 6000  # an answer kept for the drill-down is cut here


@dataclass(frozen=True)
class PendingSet:
    """A consolidation input: the text it folded into and the observations it folded."""

    label: str
    version: int | None  # the version it became (None: pending now)
    previous: str | None
    observations: list[Observation]
    previous_coverage: list[dict[str, Any]] = field(default_factory=list)


class RecordingLLM:
    """The provider, keeping every answer of one side (its tokens and model)."""

    def __init__(self, provider: LLMProvider | Any) -> None:
        self.provider = provider
        self.answers: list[LLMResult] = []
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResult:
        self.calls += 1
        answer: LLMResult = self.provider.complete(request)
        self.answers.append(answer)
        return answer


class _Estimating:
    """Keeps the requests a side would send and answers none (the estimate's provider)."""

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResult:
        self.requests.append(request)
        raise LLMError("estimate only")


def request_tokens(request: LLMRequest) -> int:
    """The most a request can cost: its prompt (about four characters a token) and the
    answer's cap (`max_tokens`, sized by the request builder)."""
    return math.ceil(len(request.prompt) / CHARS_PER_TOKEN) + (request.max_tokens or 0)


# -- extraction ---------------------------------------------------------------------------


def extraction_requests(
    *, store: MemoryStore, agent_id: str, session_id: str, draft: Draft | None
) -> list[LLMRequest]:
    plan = session_plan(store=store, agent_id=agent_id, session_id=session_id, draft=draft)
    return [extraction_request(plan)]


def extraction_side(
    *, store: MemoryStore, llm: Any, agent_id: str, session_id: str, draft: Draft | None
) -> dict[str, Any]:
    """What a formation of the session's latest messages would store."""
    recorder = RecordingLLM(llm)
    plan = session_plan(store=store, agent_id=agent_id, session_id=session_id, draft=draft)
    try:
        answer = recorder.complete(extraction_request(plan))
    except LLMError as exc:
        return _side(store, recorder, error=f"the LLM call failed: {exc}")
    try:
        stored, _dropped = parse_extraction(
            answer.text,
            plan=plan,
            max_items=plan.context.max_observations,
            max_words=plan.context.max_words,
        )
    except LLMError as exc:
        return _side(store, recorder, text=answer.text, error=f"the answer would fail: {exc}")
    routed = [(key, scope_label(key, name), content) for key, name, content in stored]
    return _routed_side(store, recorder, answer.text, routed)


# -- consolidation ------------------------------------------------------------------------


def consolidation_requests(
    *, store: MemoryStore, scope: Scope, pending: PendingSet, draft: Draft | None
) -> list[LLMRequest]:
    estimating = _Estimating()
    with suppress(LLMError):  # the estimating provider answers nothing
        consolidation_fold(
            store=store,
            llm=estimating,
            scope=scope,
            current=pending.previous,
            observations=pending.observations,
            draft=draft,
            floor=0.0,
        )
    return estimating.requests


def consolidation_side(
    *, store: MemoryStore, llm: Any, scope: Scope, pending: PendingSet, draft: Draft | None
) -> dict[str, Any]:
    """The fold of the pending set into the text before it (its overshoot retry too), with
    the run's answer checks; fidelity and coverage as the commit would record them."""
    recorder = RecordingLLM(llm)
    try:
        text, details = consolidation_fold(
            store=store,
            llm=recorder,
            scope=scope,
            current=pending.previous,
            observations=pending.observations,
            draft=draft,
        )
    except LLMError as exc:  # AnswerRefused is one: the run would fail the same way
        answered = recorder.answers[-1].text if recorder.answers else None
        return _side(store, recorder, text=answered, error=str(exc))
    fidelity = consolidation_fidelity(
        previous=pending.previous,
        text=text,
        absorbed=[(o.id, o.content) for o in pending.observations],
    )
    coverage = version_coverage(
        questions=list(details.questions),
        answers=details.answers,
        previous=pending.previous_coverage,
    )
    side = _side(store, recorder, text=text)
    side["flags"] = len(detect(text).flags)
    side["words"] = word_count(text)
    side["fidelity"] = {
        "weighed": fidelity.absorbed,
        "unstated": len(fidelity.unstated_observation_ids),
        "dropped_sentences": len(fidelity.dropped_sentences),
    }
    side["coverage"] = coverage_summary(coverage) if coverage else None
    return side


# -- propagation --------------------------------------------------------------------------


def propagation_requests(
    *, store: MemoryStore, scope: Scope, version: int, draft: Draft | None
) -> list[LLMRequest]:
    plan = propagation_plan(store=store, source=scope, version=version, draft=draft)
    return [plan.request] if plan.request is not None else []


def propagation_side(
    *, store: MemoryStore, llm: Any, scope: Scope, version: int, draft: Draft | None
) -> dict[str, Any]:
    """What propagating what `version` absorbed would copy, and where."""
    recorder = RecordingLLM(llm)
    plan = propagation_plan(store=store, source=scope, version=version, draft=draft)
    if plan.request is None:
        return _side(store, recorder, error="nothing to propagate from this version")
    try:
        answer = recorder.complete(plan.request)
    except LLMError as exc:
        return _side(store, recorder, error=f"the LLM call failed: {exc}")
    try:
        copies = propagation_copies(answer.text, source=scope, plan=plan)
    except LLMError as exc:
        return _side(store, recorder, text=answer.text, error=f"the answer would fail: {exc}")
    names = dict(plan.targets.values())
    routed = [(key, scope_label(key, names.get(key)), copy.content) for key, copy in copies]
    return _routed_side(store, recorder, answer.text, routed)


# -- the outcome of a side ----------------------------------------------------------------


def _routed_side(
    store: MemoryStore,
    recorder: RecordingLLM,
    text: str,
    routed: list[tuple[ScopeKey, str, str]],
) -> dict[str, Any]:
    side = _side(store, recorder, text=text)
    side["items"] = [{"scope": label, "content": content} for _key, label, content in routed]
    side["stored"] = len(routed)
    side["flags"] = sum(len(detect(content).flags) for _key, _label, content in routed)
    side["duplicates"] = _duplicates(store, routed)
    return side


def _duplicates(store: MemoryStore, routed: list[tuple[ScopeKey, str, str]]) -> int:
    """Items their target scope holds already (the same text key as a live observation):
    a real run would store them as nothing new."""
    keys: list[str] = []
    for key, _label, content in routed:
        target = store.scopes.find_by_identity(**key.identity())
        if target is not None:
            keys.append(text_key(target.id, content))
    if not keys:
        return 0
    held = store.observations.live_by_text_key(keys)
    return sum(1 for k in keys if k in held)


def _side(
    store: MemoryStore,
    recorder: RecordingLLM,
    *,
    text: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    prompt_tokens = sum(a.prompt_tokens for a in recorder.answers)
    completion_tokens = sum(a.completion_tokens for a in recorder.answers)
    prices = getattr(store, "prices", {}) or {}
    costs = [
        price_of(prices, a.model, a.prompt_tokens, a.completion_tokens) for a in recorder.answers
    ]
    return {
        "text": (text or "")[:MAX_KEPT_TEXT] if text is not None else None,
        "error": error,
        "items": [],
        "stored": 0,
        "flags": 0,
        "duplicates": 0,
        "words": 0,
        "fidelity": None,
        "coverage": None,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost_micro_usd": None if any(c is None for c in costs) else sum(c or 0 for c in costs),
        "model": recorder.answers[-1].model if recorder.answers else None,
        "calls": recorder.calls,
    }


def routing_changes(draft: dict[str, Any], in_effect: dict[str, Any]) -> int:
    """Scopes where the two sides would store something different."""
    labels = {i["scope"] for i in [*draft["items"], *in_effect["items"]]}
    changed = 0
    for label in labels:
        ours = sorted(i["content"] for i in draft["items"] if i["scope"] == label)
        theirs = sorted(i["content"] for i in in_effect["items"] if i["scope"] == label)
        changed += ours != theirs
    return changed


def observations_by_id(store: MemoryStore, ids: list[str]) -> list[Observation]:
    """Those of `ids` a fold may read (live, not private, not superseded), oldest first."""
    found = store.observations.get_many([ObjectId(i) for i in ids if ObjectId.is_valid(i)])
    live = [
        o
        for o in found
        if not o.deleted and not o.superseded and not o.private and not o.is_expired()
    ]
    return sorted(live, key=lambda o: o.observed_at)
