"""Questions memory must answer (issue 38, item 2): the consolidation call answers them in
its `ANSWERS:` trailer (no extra call), each version stores `coverage` per question, a
version that stops answering one marks it `lost`, and a malformed trailer stores the
version with coverage `unknown` (never a guessed answer) and says so in the job result.
Across the four scope types, with the strict fake and the offline provider."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from bson import ObjectId

from streams.core.exceptions import InvalidInput
from streams.llm.answers_trailer import answers_split, offline_answers
from streams.llm.offline import OfflineProvider
from streams.llm.port import ConsolidationContext, DatedObservation, LLMError
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observations import observation_add
from streams.memory.requests import consolidation_request as build_request
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.prompts.questions import questions_in_effect, questions_save, validate_questions
from streams.store import MemoryStore
from tests.fakes.openai_wire import Reply, prompt_questions
from tests.task_mode import run_job, settle

AGENT = "a1"
KEYS = {
    "individual": ScopeKey.individual(AGENT, "u1"),
    "group": ScopeKey.group(AGENT, "g1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "ops"),
}
KINDS = list(KEYS)
PLAN = "The account is on the Pro billing plan since March 2026."
EDITOR = "The preferred editor is Helix with vim keys."
QUESTIONS = ["What billing plan is the account on?", "Which timezone applies?"]


def _scope(store: MemoryStore, kind: str):
    scope, _ = scope_get_or_create(store=store, key=KEYS[kind])
    return scope


def _consolidate(store: MemoryStore, scope_id: str) -> dict:
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="t")
    run = run_job(store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r))
    settle(store)
    return run.result if run is not None else {}


def _add(store: MemoryStore, scope_id: str, text: str) -> None:
    observation_add(store=store, scope=scope_get(store=store, scope_id=scope_id), content=text)


def _latest(store: MemoryStore, scope_id: str):
    scope = scope_get(store=store, scope_id=scope_id)
    return store.consolidations.get(ObjectId(scope.id), scope.consolidation_version)


@pytest.mark.parametrize("kind", KINDS)
def test_a_version_answers_the_kinds_default_questions_in_the_same_call(
    store: MemoryStore, fake_openai, kind: str
) -> None:
    scope = _scope(store, kind)
    questions_save(store=store, agent_id=AGENT, scope_kind=kind, questions=QUESTIONS, author="op")
    _add(store, scope.id, PLAN)
    result = _consolidate(store, scope.id)
    consolidations = [r for r in fake_openai.chat_requests if r.task == "consolidation"]
    assert len(consolidations) == 1  # no extra call for the answers
    assert prompt_questions(consolidations[0]) == QUESTIONS
    version = _latest(store, scope.id)
    assert [c["status"] for c in version.coverage] == ["answered", "unanswered"]
    assert "Pro billing plan" in version.coverage[0]["answer"]
    assert "ANSWERS" not in version.text and "Q1" not in version.text
    assert result["coverage"] == {"answered": 1, "unanswered": 1, "lost": 0, "unknown": 0}


@pytest.mark.parametrize("kind", KINDS)
def test_a_version_that_stops_answering_marks_the_question_lost(
    store: MemoryStore, fake_openai, kind: str
) -> None:
    scope = _scope(store, kind)
    # The scope's override wins over the agent's default for its kind.
    questions_save(store=store, agent_id=AGENT, scope_kind=kind, questions=["Who?"], author="op")
    questions_save(
        store=store,
        agent_id=AGENT,
        scope_kind=kind,
        questions=QUESTIONS[:1],
        author="op",
        scope=scope,
    )
    _add(store, scope.id, PLAN)
    _consolidate(store, scope.id)
    _add(store, scope.id, EDITOR)
    fake_openai.reply(f"{EDITOR}\n\nANSWERS:\nQ1: NOT STATED")
    result = _consolidate(store, scope.id)
    version = _latest(store, scope.id)
    assert version.coverage == [{"question": QUESTIONS[0], "answer": None, "status": "lost"}]
    assert result["coverage_lost"] == QUESTIONS[:1]


@pytest.mark.parametrize("kind", KINDS)
def test_a_malformed_trailer_stores_the_version_with_coverage_unknown(
    store: MemoryStore, fake_openai, kind: str
) -> None:
    scope = _scope(store, kind)
    questions_save(store=store, agent_id=AGENT, scope_kind=kind, questions=QUESTIONS, author="op")
    _add(store, scope.id, PLAN)
    # The strict fake refuses this answer; strict=False sends what a sloppy model would.
    fake_openai.enqueue(Reply(f"{PLAN}\n\nANSWERS:\nThe plan is Pro.", strict=False))
    result = _consolidate(store, scope.id)
    version = _latest(store, scope.id)
    assert version is not None and version.version == 1 and "Pro billing plan" in version.text
    assert [c["status"] for c in version.coverage] == ["unknown", "unknown"]
    assert all(c["answer"] is None for c in version.coverage)
    assert "not Q<n>:" in result["coverage_unknown"]


def test_the_strict_fake_refuses_an_answer_without_the_asked_trailer(
    store: MemoryStore, fake_openai
) -> None:
    scope = _scope(store, "group")
    questions_save(store=store, agent_id=AGENT, scope_kind="group", questions=QUESTIONS, author="o")
    _add(store, scope.id, PLAN)
    fake_openai.reply(PLAN)  # strict: no ANSWERS: trailer
    with pytest.raises(LLMError, match="ANSWERS: trailer"):
        _consolidate(store, scope.id)
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 0


def test_no_questions_no_trailer_asked_and_coverage_empty(store: MemoryStore, fake_openai) -> None:
    scope = _scope(store, "individual")
    _add(store, scope.id, PLAN)
    _consolidate(store, scope.id)
    (request,) = [r for r in fake_openai.chat_requests if r.task == "consolidation"]
    assert prompt_questions(request) == [] and "ANSWERS:" not in str(request.body)
    assert _latest(store, scope.id).coverage == []


def test_the_offline_provider_answers_deterministically() -> None:
    context = ConsolidationContext(
        scope_description="memory of the group g1",
        current=None,
        observations=[
            DatedObservation(PLAN, datetime(2026, 3, 1, tzinfo=UTC), "a" * 24),
            DatedObservation(EDITOR, datetime(2026, 3, 2, tzinfo=UTC), "b" * 24),
        ],
        max_words=200,
        questions=QUESTIONS + ["What editor is preferred?"],
    )
    request = build_request(
        template="{scope}{consolidation}{observations}{max_words}", context=context
    )
    first = OfflineProvider().complete(request).text
    assert first == OfflineProvider().complete(request).text
    read = answers_split(first, 3)
    assert read.error is None and read.answers is not None
    assert read.answers[0] is not None and "Pro" in read.answers[0]
    assert read.answers[1] is None
    assert read.answers[2] is not None and "Helix" in read.answers[2]
    assert "ANSWERS" not in read.memory
    assert offline_answers(read.memory, ["Which timezone applies?"]) == [None]


def test_the_trailer_after_contradictions_or_before_both_read() -> None:
    body = "Memory.\n\nANSWERS:\nQ1: Pro\n\nCONTRADICTIONS:\n[a] [b]"
    read = answers_split(body, 1)
    assert read.answers == ["Pro"] and read.memory == "Memory.\n\nCONTRADICTIONS:\n[a] [b]"
    read = answers_split("Memory.\n\nCONTRADICTIONS:\n[a] [b]\n\nANSWERS:\nQ1: NOT STATED", 1)
    assert read.answers == [None] and "ANSWERS" not in read.memory
    assert answers_split("Memory.", 1).answers is None
    assert answers_split("Memory.\nANSWERS:\nQ1: x\nQ1: y", 2).answers is None
    assert (
        answers_split("Memory.\nANSWERS:\nQ1: x", 2).error
        == "the trailer answers 1 of the 2 questions"
    )


@pytest.mark.parametrize(
    ("raw", "index"),
    [(["q"] * 3 + ["a", "b", "c"], None), (["ok?", "  "], 1), (["x" * 201], 0)],
)
def test_questions_over_the_limit_empty_or_too_long_name_the_field(raw, index) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_questions(raw)
    (detail,) = caught.value.details
    assert detail["field"] == "questions" and detail.get("index") == index


def test_versions_and_clearing_fall_back_to_the_default(store: MemoryStore) -> None:
    scope = _scope(store, "shard")
    questions_save(store=store, agent_id=AGENT, scope_kind="shard", questions=["A?"], author="o")
    assert questions_in_effect(store=store, scope=scope).source == "agent"
    saved = questions_save(
        store=store, agent_id=AGENT, scope_kind="shard", questions=["B?"], author="o", scope=scope
    )
    assert saved is not None and saved.version == 1
    fresh = scope_get(store=store, scope_id=scope.id)
    assert questions_in_effect(store=store, scope=fresh).questions == ["B?"]
    cleared = questions_save(
        store=store, agent_id=AGENT, scope_kind="shard", questions=None, author="o", scope=fresh
    )
    assert cleared is not None and cleared.version == 2 and cleared.cleared
    fresh = scope_get(store=store, scope_id=scope.id)
    assert questions_in_effect(store=store, scope=fresh).questions == ["A?"]


def test_forgetting_the_user_removes_the_scopes_own_questions(store: MemoryStore) -> None:
    from streams.people.privacy import forget_user_request, forget_user_run

    scope = _scope(store, "individual")
    questions_save(
        store=store, agent_id=AGENT, scope_kind="individual", questions=["What plan is u1 on?"],
        author="op", scope=scope,
    )  # fmt: skip
    job = forget_user_request(store=store, agent_id=AGENT, user_id="u1", actor="op")
    run_job(store=store, job_id=job.id, work=lambda r: forget_user_run(store=store, run=r))
    settle(store)
    left = store.questions.latest(
        agent_id=AGENT, scope_kind="individual", scope_id=ObjectId(scope.id)
    )
    assert left is None
