"""Usage counters written with the jobs: tokens, estimated cost, failed runs and growth per
agent, scope, prompt version and model; rankings of scopes by cost and by backlog."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streams.core.documents import utcnow
from streams.jobs import job_create, job_execute
from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.scopes import scope_get
from streams.records.usage import (
    agent_usage,
    price_of,
    scope_health,
    scope_usage,
    top_scopes_by_backlog,
    top_scopes_by_cost,
)
from tests.factories import ObservationFactory, ScopeFactory

PRICES = {OFFLINE_MODEL: (1.0, 2.0)}  # $1 / $2 per million tokens: costs show up


def _consolidate(store, scope):
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="ui", actor="op"
    )
    job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda run: consolidation_run(store=store, run=run),
    )
    return job


@pytest.fixture
def priced(store):
    store.prices = dict(PRICES)
    return store


def test_price_of_is_per_million_tokens_and_none_without_a_price():
    assert price_of(PRICES, OFFLINE_MODEL, 1000, 500) == 1000 * 1 + 500 * 2
    assert price_of(PRICES, "gpt-unknown", 10, 10) is None


def test_a_consolidation_counts_for_agent_scope_prompt_and_model(priced):
    store = priced
    scope = ScopeFactory.create(store=store, agent_id="a1")
    for _ in range(3):
        ObservationFactory.create(store=store, scope=scope)
    _consolidate(store, scope)
    today = utcnow().date()

    usage = agent_usage(store=store, agent_id="a1", days=7, today=today)
    assert usage.total.jobs == 1 and usage.total.calls == 1 and usage.total.failed == 0
    assert usage.total.prompt_tokens > 0 and usage.total.completion_tokens > 0
    expected = usage.total.prompt_tokens * 1 + usage.total.completion_tokens * 2
    assert usage.total.cost_micro == expected
    assert [name for name, _ in usage.by_prompt] == ["consolidation v0"]  # the code default
    assert [name for name, _ in usage.by_model] == [OFFLINE_MODEL]

    windows = scope_usage(store=store, scope_id=scope.id, today=today)
    assert windows[1].cost_micro == windows[30].cost_micro == expected
    assert scope_usage(store=store, scope_id=scope.id, today=today + timedelta(days=2))[1].jobs == 0
    assert [r.scope_id for r in top_scopes_by_cost(store=store, days=1, today=today)] == [scope.id]


def test_an_unpriced_model_counts_tokens_but_no_cost(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    ObservationFactory.create(store=store, scope=scope)
    _consolidate(store, scope)
    total = agent_usage(store=store, agent_id="a1", days=1, today=utcnow().date()).total
    assert total.cost_micro == 0 and total.unpriced_tokens > 0


def test_a_failed_run_is_counted_for_its_scope(priced):
    store = priced
    scope = ScopeFactory.create(store=store, agent_id="a1")
    job = job_create(store=store, kind="consolidation", agent_id="a1", scope_id=scope.id)

    def boom(run):
        raise RuntimeError("LLM down")

    with pytest.raises(RuntimeError):
        job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=boom)
    today = utcnow().date()
    assert scope_usage(store=store, scope_id=scope.id, today=today)[30].failed == 1
    fresh = scope_get(store=store, scope_id=scope.id)
    health = scope_health(
        store=store, scope=fresh, usage=scope_usage(store=store, scope_id=scope.id, today=today)
    )
    assert health.failed_runs == 1 and health.consolidation_age is None


def test_backlog_ranking_follows_the_jobs(priced):
    store = priced
    big = ScopeFactory.create(store=store, agent_id="a1")
    small = ScopeFactory.create(store=store, agent_id="a2")
    for _ in range(4):
        ObservationFactory.create(store=store, scope=big)
    ObservationFactory.create(store=store, scope=small)
    failed = job_create(store=store, kind="consolidation", agent_id="a1", scope_id=big.id)
    with pytest.raises(RuntimeError):
        job_execute(
            store=store,
            job_id=failed.id,
            llm=OfflineProvider(),
            work=lambda run: (_ for _ in ()).throw(RuntimeError("x")),
        )
    _consolidate(store, small)
    ranked = top_scopes_by_backlog(store=store)
    assert [(s.id, n) for s, n in ranked] == [(big.id, 4)]  # small has no backlog left
    health = scope_health(
        store=store,
        scope=scope_get(store=store, scope_id=big.id),
        usage=scope_usage(store=store, scope_id=big.id, today=utcnow().date()),
    )
    assert health.backlog_age is not None and health.backlog_age >= timedelta(0)


def test_a_free_model_still_ranks_scopes_by_tokens(store):
    store.prices = {OFFLINE_MODEL: (0.0, 0.0)}  # the offline demo provider costs nothing
    scope = ScopeFactory.create(store=store, agent_id="a1")
    ObservationFactory.create(store=store, scope=scope)
    _consolidate(store, scope)
    [ranked] = top_scopes_by_cost(store=store, days=7, today=utcnow().date())
    assert (ranked.scope_id, ranked.value) == (scope.id, 0) and ranked.tokens > 0
