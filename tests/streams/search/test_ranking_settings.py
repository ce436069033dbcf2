"""The lifecycle ranking switches as settings: resolved code < agent < scope, applied by
search and context per hit (recency, feedback) or per search (MMR), audited, validated;
and the relevance scale that `min_score` compares."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from bson import ObjectId

from benchmarks.retrieval_lifecycle import SWITCH_RANKERS
from streams.actions.base import Actor
from streams.actions.ranking import do_agent_ranking_update, do_scope_ranking_update
from streams.context.assemble import context_assemble
from streams.core.exceptions import InvalidInput, NotFound
from streams.records.audit import audit_page
from streams.search.index import search_in_scopes
from streams.search.ranking_settings import (
    MEASURED_EFFECT,
    RANKING_SWITCHES,
    ranking_for_scopes,
    ranking_settings_check,
    resolve_switches,
)
from streams.search.relevance import SEED_THRESHOLD, relevance, score_at_relevance
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"
DAY = datetime(2024, 5, 1, 12, tzinfo=UTC)
ACTOR = Actor.api("key-1")
KINDS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def _scope_with_two(store: MemoryStore, kind: str):
    scope = ScopeFactory.create(store=store, **KINDS[kind])
    for days, text in ((0, "Rust note from spring"), (40, "Rust note from summer")):
        ObservationFactory.create(
            store=store, scope=scope, content=text, observed_at=DAY + timedelta(days=days)
        )
    return scope


def _mechanisms(store: MemoryStore, scopes, query: str = "rust note") -> list[set[str]]:
    ranking = ranking_for_scopes(store=store, agent_id=AGENT, scopes=scopes)
    hits = search_in_scopes(store=store, scopes=scopes, query=query, ranking=ranking)
    return [set(h.explanation.mechanisms) for h in hits if h.explanation is not None]


def test_the_code_default_is_off_and_each_switch_names_its_measured_effect() -> None:
    resolved = resolve_switches(agent_ranking={})
    assert {n: (s.value, s.source, s.own) for n, s in resolved.items()} == {
        n: (False, "code", None) for n in RANKING_SWITCHES
    }
    # The figures the forms show come from the benchmark's table, switch by switch.
    assert set(MEASURED_EFFECT) == set(RANKING_SWITCHES) == set(SWITCH_RANKERS)
    assert resolved["recency"].effect.figure.startswith("recall@5 ")


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_scope_setting_wins_over_the_agent_and_the_agent_over_the_code(
    store: MemoryStore, kind: str
) -> None:
    scope = _scope_with_two(store, kind)
    assert all("recency" not in m for m in _mechanisms(store, [scope]))

    do_agent_ranking_update(store=store, actor=ACTOR, agent_id=AGENT, changes={"recency": True})
    fresh = store.scopes.get(ObjectId(scope.id))
    assert all("recency" in m for m in _mechanisms(store, [fresh])[:1])  # the newest gains

    fresh = do_scope_ranking_update(
        store=store, actor=ACTOR, scope=fresh, changes={"recency": False, "mmr": True}
    )
    assert fresh.ranking == {"recency": False, "mmr": True}
    assert all("recency" not in m for m in _mechanisms(store, [fresh]))
    ranking = ranking_for_scopes(store=store, agent_id=AGENT, scopes=[fresh])
    assert (ranking.recency, ranking.mmr, ranking.feedback) == (False, True, False)
    switches = resolve_switches(agent_ranking={"recency": True}, scope_ranking=fresh.ranking)
    assert switches["recency"].source == "scope" and switches["feedback"].source == "code"

    # null: the scope inherits again (the agent's recency).
    fresh = do_scope_ranking_update(
        store=store, actor=ACTOR, scope=fresh, changes={"recency": None}
    )
    assert fresh.ranking == {"mmr": True}
    assert any("recency" in m for m in _mechanisms(store, [fresh]))
    entries = audit_page(store=store, action="scope.update").items
    assert entries[0].summary == {
        "ranking": {"from": {"recency": False, "mmr": True}, "to": {"mmr": True}}
    }


def test_in_a_search_of_several_scopes_each_hit_gets_its_own_scopes_switches(
    store: MemoryStore,
) -> None:
    """Recency acts on each hit: only the scope that turned it on lifts its hits; MMR
    reorders the whole list, so it follows the agent when several scopes are searched."""
    mine = _scope_with_two(store, "individual")
    team = _scope_with_two(store, "group")
    do_scope_ranking_update(
        store=store, actor=ACTOR, scope=team, changes={"recency": True, "mmr": True}
    )
    scopes = [store.scopes.get(ObjectId(s.id)) for s in (mine, team)]
    ranking = ranking_for_scopes(store=store, agent_id=AGENT, scopes=scopes)
    assert not ranking.recency and not ranking.mmr
    hits = search_in_scopes(store=store, scopes=scopes, query="rust note", ranking=ranking)
    lifted = {h.observation.scope_id for h in hits if "recency" in h.explanation.mechanisms}
    assert lifted == {team.id}


def test_the_feedback_prior_follows_the_setting(store: MemoryStore) -> None:
    scope = _scope_with_two(store, "group")
    for hit in search_in_scopes(store=store, scopes=[scope], query="spring"):
        store.observations.add_feedback(ObjectId(hit.observation.id), useful=True, call_id=None)
    assert all("importance" not in m for m in _mechanisms(store, [scope], "spring"))
    do_agent_ranking_update(store=store, actor=ACTOR, agent_id=AGENT, changes={"feedback": True})
    assert all("importance" in m for m in _mechanisms(store, [scope], "spring"))


def test_context_applies_the_settings(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    for days, text in ((0, "Rust traits"), (40, "Rust lifetimes")):
        ObservationFactory.create(
            store=store, scope=scope, content=text, observed_at=DAY + timedelta(days=days)
        )
    # Not pending (so not shown as recent): only retrieval finds them.
    store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})
    do_agent_ranking_update(store=store, actor=ACTOR, agent_id=AGENT, changes={"recency": True})
    result = context_assemble(
        store=store, agent_id=AGENT, user_id="u1",
        message="Do you remember what I said about Rust?", log=False, record_access=False,
    )  # fmt: skip
    assert result.hits and "recency" in result.hits[0].explanation.mechanisms


def test_bad_settings_are_refused_and_an_unknown_agent_is_not_found(store: MemoryStore) -> None:
    for bad in ({"recency": "yes"}, {"recency": 1}, {"speed": True}):
        with pytest.raises(InvalidInput):
            ranking_settings_check(bad)
    with pytest.raises(NotFound):
        do_agent_ranking_update(store=store, actor=ACTOR, agent_id="nobody", changes={"mmr": True})


def test_relevance_is_a_monotonic_0_to_1_scale_and_min_score_the_same_cut() -> None:
    scores = [-5.0, 0.0, 1.0, 1.38, 2.0, 3.5, 12.0]
    values = [relevance(s) for s in scores]
    assert values == sorted(values) and all(0 <= v <= 1 for v in values)
    assert relevance(2.0) == 0.5
    assert score_at_relevance(0) is None and score_at_relevance(1) == math.inf
    assert score_at_relevance(SEED_THRESHOLD) == pytest.approx(2 - math.log(0.65 / 0.35))
    for threshold in (0.1, 0.35, 0.5, 0.9):
        cut = score_at_relevance(threshold)
        assert abs(relevance(cut) - threshold) < 1e-4
    for bad in (-0.01, 1.5):
        with pytest.raises(ValueError):
            score_at_relevance(bad)
