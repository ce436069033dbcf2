"""Consolidation in chunks (issue 42 item 3): a pending set beyond one prompt's budget
folds chunk after chunk into ONE version; a failed or killed run commits nothing, and
the run that takes over starts again, so nothing is absorbed twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from benchmarks.consolidation_chunks import pending_fact, pending_seed
from memory_admin.integrations.llm import get_llm_provider
from streams.drafts.dry_run import dry_run_consolidation
from streams.jobs import job_create, job_execute, job_get, job_retry
from streams.llm.offline import OfflineProvider, estimate_tokens
from streams.llm.port import LLMError
from streams.memory.consolidation import consolidation_history
from streams.memory.consolidation_chunks import chunk_plan
from streams.memory.consolidation_estimate import consolidation_estimate
from streams.memory.consolidation_runs import consolidation_inputs, consolidation_run
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_wire import (
    Fail,
    consolidation_lines,
    default_responder,
    faithful_memory,
    prompt_text,
    with_answers,
)

KINDS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}
LINES_PER_CHUNK = 4


class RunnerKilled(BaseException):
    """A runner killed between chunks, as the job sees it: no `except Exception` catches
    it, so the job stays "running" (no failure recorded) and nothing after it runs."""


def small_scope(store, kind: str = "individual", count: int = 12):
    scope = ScopeFactory.create(store=store, consolidation_threshold=10_000, **KINDS[kind])
    for n in range(count):
        ObservationFactory.create(store=store, scope=scope, content=pending_fact(n))
    return scope_get(store=store, scope_id=scope.id)


def budget_for(store, scope, lines: int = LINES_PER_CHUNK) -> int:
    """A budget that fits `lines` of the scope's observation lines beside the fixed part."""
    _live, folded = consolidation_inputs(store=store, scope=scope)
    whole = chunk_plan(store=store, scope=scope, observations=folded, budget=10**9)
    return whole.fixed_tokens + whole.line_tokens[0] * lines // len(folded)


def execute(store, job_id, *, budget, floor=0.5, after_chunk=None, stale_after=None):
    extra = {} if stale_after is None else {"stale_after": stale_after}
    return job_execute(
        store=store,
        job_id=job_id,
        llm=get_llm_provider(),
        work=lambda run: consolidation_run(
            store=store, run=run, fidelity_floor=floor, chunk_tokens=budget, after_chunk=after_chunk
        ),
        **extra,
    )


def new_job(store, scope):
    return job_create(store=store, kind="consolidation", agent_id=scope.agent_id, scope_id=scope.id)


def assert_untouched(store, before):
    after = scope_get(store=store, scope_id=before.id)
    assert after.consolidation_version == before.consolidation_version
    assert after.consolidation == before.consolidation
    assert after.pending_observation_ids == before.pending_observation_ids
    assert consolidation_history(store=store, scope=after).items == []


def assert_one_version_absorbing_all(store, before):
    after = scope_get(store=store, scope_id=before.id)
    history = consolidation_history(store=store, scope=after).items
    assert [v.version for v in history] == [before.consolidation_version + 1]
    absorbed = history[0].absorbed_observation_ids
    assert len(absorbed) == len(set(absorbed)), "an observation was absorbed twice"
    assert sorted(absorbed) == sorted(before.pending_observation_ids)
    assert after.pending_observation_ids == []
    return after, history[0]


def test_the_plan_keeps_order_cuts_every_observation_once_and_fits_the_budget(store):
    scope = small_scope(store, count=30)
    _live, folded = consolidation_inputs(store=store, scope=scope)
    budget = budget_for(store, scope)
    plan = chunk_plan(store=store, scope=scope, observations=folded, budget=budget)
    assert len(plan.chunks) > 1
    assert [o.id for chunk in plan.chunks for o in chunk] == [o.id for o in folded]
    assert all(plan.fixed_tokens + size <= budget for size in plan.line_tokens)
    one = chunk_plan(store=store, scope=scope, observations=folded, budget=10**9)
    assert len(one.chunks) == 1 and one.line_tokens == [sum(plan.line_tokens)]


@pytest.mark.parametrize("kind", KINDS)
def test_chunks_feed_each_other_and_commit_one_version(store, fake_openai, kind):
    scope = small_scope(store, kind)
    budget = budget_for(store, scope)
    expected = len(
        chunk_plan(
            store=store,
            scope=scope,
            observations=consolidation_inputs(store=store, scope=scope)[1],
            budget=budget,
        ).chunks
    )
    assert expected >= 3
    run = execute(store, new_job(store, scope).id, budget=budget)

    asked = fake_openai.chat_requests
    assert len(asked) == expected == run.result["chunks"]
    answers = [default_responder(request) for request in asked]
    for earlier, later in zip(answers, asked[1:], strict=False):
        assert earlier in prompt_text(later), "a chunk did not fold into the last one's text"
    offered = [i for request in asked for i in consolidation_lines(request)]
    assert sorted(offered) == sorted(scope.pending_observation_ids)  # each offered once
    for request in asked:  # what the model is sent fits the budget
        assert estimate_tokens(prompt_text(request)) <= budget
    estimate = consolidation_estimate(
        store=store, scope=scope, chunk_tokens=budget, model="gpt-4o", prices={}
    )
    assert estimate.max_completion_tokens == sum(r.body["max_tokens"] for r in asked)
    after, version = assert_one_version_absorbing_all(store, scope)
    assert after.consolidation == answers[-1]
    assert version.prompt_tokens == run.result["prompt_tokens"] > 0
    assert version.fidelity["unstated_observation_ids"] == []  # over the whole version
    assert run.result["absorbed"] == 12 and run.result["chunk_tokens"] == budget


@pytest.mark.parametrize("failing_chunk", [1, 2, 3])
def test_a_failed_chunk_loses_nothing_and_commits_nothing(store, fake_openai, failing_chunk):
    scope = small_scope(store)
    budget = budget_for(store, scope)
    calls = []

    def respond(request):
        calls.append(request)
        if len(calls) >= failing_chunk:  # this chunk's call and its retries: all fail
            return Fail(status=500, message="chunk failed")
        return default_responder(request)

    fake_openai.set_responder(respond)
    job = new_job(store, scope)
    with pytest.raises(LLMError):
        execute(store, job.id, budget=budget)
    assert job_get(store=store, job_id=job.id).status == "failed"
    assert len({tuple(consolidation_lines(r)) for r in calls}) == failing_chunk
    assert_untouched(store, scope)

    fake_openai.reset()
    job_retry(store=store, job_id=job.id)
    run = execute(store, job.id, budget=budget)
    assert_one_version_absorbing_all(store, scope)
    assert run.result["chunks"] == len(fake_openai.chat_requests) >= 3  # started again


@pytest.mark.parametrize("killed_after", [1, 2])
def test_a_run_killed_between_chunks_is_started_again_by_the_takeover(
    store, fake_openai, killed_after
):
    scope = small_scope(store)
    budget = budget_for(store, scope)

    def kill(number: int) -> None:
        if number == killed_after:
            raise RunnerKilled

    job = new_job(store, scope)
    with pytest.raises(RunnerKilled):
        execute(store, job.id, budget=budget, after_chunk=kill)
    assert job_get(store=store, job_id=job.id).status == "running"  # as a killed runner
    assert_untouched(store, scope)
    first = len(fake_openai.chat_requests)
    assert first == killed_after

    # The takeover of the stale job (its heartbeat stopped) takes its own lease back.
    run = execute(store, job.id, budget=budget, stale_after=timedelta(0))
    assert run is not None and job_get(store=store, job_id=job.id).status == "succeeded"
    after, version = assert_one_version_absorbing_all(store, scope)
    assert run.result["chunks"] == len(fake_openai.chat_requests) - first >= 3
    assert after.consolidation == default_responder(fake_openai.chat_requests[-1])
    assert version.absorbed_observation_ids[0] in consolidation_lines(
        fake_openai.chat_requests[first]
    )


def test_a_hook_failing_between_chunks_fails_the_job_and_the_retry_absorbs_once(store, fake_openai):
    scope = small_scope(store)
    budget = budget_for(store, scope)

    def broken(number: int) -> None:
        raise RuntimeError(f"crashed after chunk {number}")

    job = new_job(store, scope)
    with pytest.raises(RuntimeError):
        execute(store, job.id, budget=budget, after_chunk=broken)
    failed = job_get(store=store, job_id=job.id)
    assert failed.status == "failed" and "after chunk 1" in (failed.error or "")
    assert_untouched(store, scope)
    job_retry(store=store, job_id=job.id)
    execute(store, job.id, budget=budget)
    assert_one_version_absorbing_all(store, scope)


def test_a_chunk_below_the_fidelity_floor_is_refused_and_commits_nothing(store, fake_openai):
    scope = small_scope(store)
    budget = budget_for(store, scope)
    calls = []

    def respond(request):
        calls.append(request)
        if len(calls) == 2:  # chunk 2 drops what it was given
            return "The memory holds a few notes about people and their things."
        return default_responder(request)

    fake_openai.set_responder(respond)
    job = new_job(store, scope)
    with pytest.raises(LLMError, match="below_floor"):
        execute(store, job.id, budget=budget)
    assert job_get(store=store, job_id=job.id).result["refused"] == "below_floor"
    assert_untouched(store, scope)


def test_a_contradiction_in_a_later_chunk_is_held_and_left_out_of_the_version(store, fake_openai):
    scope = ScopeFactory.create(store=store, group=True, consolidation_threshold=10_000)
    for n in range(8):
        ObservationFactory.create(store=store, scope=scope, content=pending_fact(n))
    ObservationFactory.create(store=store, scope=scope, content="Standup is on Mondays.")
    ObservationFactory.create(store=store, scope=scope, content="Standup is on Tuesdays.")
    scope = scope_get(store=store, scope_id=scope.id)
    budget = budget_for(store, scope)

    def respond(request):
        lines = consolidation_lines(request)
        older = [i for i, text in lines.items() if "on Mondays" in text]
        newer = [i for i, text in lines.items() if "on Tuesdays" in text]
        memory = faithful_memory(request)
        if older and newer:
            memory += f"\n\nCONTRADICTIONS:\n[{older[0]}] [{newer[0]}]"
        return with_answers(request, memory)

    fake_openai.set_responder(respond)
    run = execute(store, new_job(store, scope).id, budget=budget)
    assert run.result["chunks"] >= 3
    newer = next(
        o for o in consolidation_inputs(store=store, scope=scope)[1] if "Tues" in o.content
    )
    assert run.result["held_for_review"] == [newer.id]
    after = scope_get(store=store, scope_id=scope.id)
    version = consolidation_history(store=store, scope=after).items[0]
    assert newer.id not in version.absorbed_observation_ids
    assert "Tuesdays" not in (after.consolidation or "")
    assert len(version.absorbed_observation_ids) == 9 and after.pending_observation_ids == []


def test_five_thousand_pending_fold_in_chunks_into_one_version(store):
    scope = ScopeFactory.create(store=store, consolidation_threshold=1_000_000)
    pending_seed(store=store, scope=scope, count=5000)
    scope = scope_get(store=store, scope_id=scope.id)
    assert scope.pending_count == 5000
    estimate = consolidation_estimate(
        store=store, scope=scope, chunk_tokens=6000, model="offline-rules", prices={}
    )
    assert estimate.folded == 5000 and estimate.chunks > 10
    job = new_job(store, scope)
    run = job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        # A 500-word memory cannot state 5,000 distinct facts: the floor is not tested here.
        work=lambda run: consolidation_run(store=store, run=run, fidelity_floor=0.0),
    )
    assert run.result["chunks"] == estimate.chunks == run.llm.calls
    assert run.result["absorbed"] == 5000
    assert run.result["prompt_tokens"] <= estimate.prompt_tokens  # the estimate is a bound
    assert all(r.prompt_tokens <= 6000 for r in run.llm.results)
    after, version = assert_one_version_absorbing_all(store, scope)
    assert len(version.absorbed_observation_ids) == 5000
    assert pending_fact(4999).rstrip(".") in after.consolidation  # the newest survive
    again = new_job(store, after)
    assert (
        job_execute(
            store=store,
            job_id=again.id,
            llm=OfflineProvider(),
            work=lambda run: consolidation_run(store=store, run=run),
        ).result["note"]
        == "nothing pending"
    )


def test_the_dry_run_shows_the_chunks_and_sends_what_the_run_sends(store, fake_openai):
    scope = small_scope(store)
    budget = budget_for(store, scope)
    one = dry_run_consolidation(store=store, llm=get_llm_provider(), scope=scope, draft=None)
    assert one.chunks == [12] and len(one.requests) == 1
    result = dry_run_consolidation(
        store=store, llm=get_llm_provider(), scope=scope, draft=None, chunk_tokens=budget
    )
    assert len(result.chunks) >= 3 and sum(result.chunks) == 12
    assert len(result.requests) == len(result.chunks)
    fake_openai.reset()
    execute(store, new_job(store, scope).id, budget=budget)
    sent = [consolidation_lines(r) for r in fake_openai.chat_requests]
    assert [len(lines) for lines in sent] == result.chunks
    assert all(
        request.prompt in prompt_text(r)
        for request, r in zip(result.requests, fake_openai.chat_requests, strict=True)
    )


def test_a_long_chunked_run_renews_its_lease_between_chunks(store, fake_openai):
    scope = small_scope(store)
    budget = budget_for(store, scope)
    seen = []

    def look(number: int) -> None:
        seen.append(store.scopes.lease_holder(ObjectId(scope.id)))

    job = new_job(store, scope)
    job_execute(
        store=store,
        job_id=job.id,
        llm=get_llm_provider(),
        work=lambda run: consolidation_run(
            store=store,
            run=run,
            lease=timedelta(microseconds=1),  # half of it is spent by the first chunk
            chunk_tokens=budget,
            after_chunk=look,
        ),
    )
    assert len(seen) >= 3 and {owner for owner, _ in seen} == {job.id}
    untils = [until for _, until in seen]
    assert untils == sorted(untils) and len(set(untils)) == len(untils)
    assert store.scopes.lease_holder(ObjectId(scope.id))[0] is None  # released at the end
