"""Each ranking mechanism on small hand-made cases (the benchmark measures the figure):
term weighting, question-form words, people, session neighbours, dates; and the
explanation, `min_score`, the observed-time window and search counting as an access."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter
from streams.documents import Scope
from streams.ranking import (
    FINAL,
    LAST_WAVE,
    SHORT_B,
    SHORT_K1,
    Ranking,
    asks_when,
    query_parse,
    says_when,
    term_stage,
)
from streams.search import search_observations
from streams.store import MemoryStore
from streams.store.search import Posting, ScopeTotals, TermStats
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"
DAY = datetime(2024, 5, 1, 12, tzinfo=UTC)


def _search(store: MemoryStore, query: str, ranking: Ranking = FINAL, **kwargs):
    return search_observations(
        store=store, agent_id=AGENT, user_id="u1", query=query, ranking=ranking, **kwargs
    )


def _contents(hits) -> list[str]:
    return [h.observation.content for h in hits]


def _add(store: MemoryStore, scope: Scope, content: str, **kwargs):
    return ObservationFactory.create(store=store, scope=scope, content=content, **kwargs)


def test_term_weighting_punishes_length_less_than_last_wave_and_final_not_at_all() -> None:
    short, long = ObjectId(), ObjectId()
    scope = ObjectId()
    totals = [ScopeTotals(scope_id=scope, documents=10, length=100)]
    stats = [TermStats(scope, "rust", 2, [Posting(short, 1, 4), Posting(long, 1, 20)])]

    def ratio(ranking: Ranking) -> float:
        found = term_stage(totals=totals, stats=stats, ranking=ranking)
        return found[long].term_score / found[short].term_score

    short_passages = replace(LAST_WAVE, k1=SHORT_K1, b=SHORT_B)
    assert ratio(LAST_WAVE) < ratio(short_passages) < 1  # still shorter first, by less
    # Final: a scope that fills with short texts does not push the longer ones down.
    assert ratio(FINAL) == 1


def test_question_form_words_leave_the_query_unless_nothing_else_is_left() -> None:
    assert query_parse("What kind of music does Gene like?", ranking=FINAL).terms == [
        "music",
        "gene",
    ]
    assert query_parse("What kind of music?", ranking=LAST_WAVE).terms == ["kind", "music"]
    assert query_parse("which kind?", ranking=FINAL).terms == ["kind"]


def test_people_a_hit_that_names_the_person_asked_about_comes_first(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    for text in ["Melanie likes tea.", "Melanie runs.", "Melanie paints.", "Melanie reads."]:
        _add(store, scope, text, observed_at=DAY - timedelta(days=30))
    _add(store, scope, "Caroline: kids at the kids museum", observed_at=DAY)
    _add(store, scope, "Melanie: my kids are into dinosaurs at the museum", observed_at=DAY)
    query = "What do Melanie's kids like at the museum?"

    without = _search(store, query, LAST_WAVE, record_access=False)
    with_people = _search(store, query, replace(LAST_WAVE, people=True), record_access=False)

    assert _contents(without)[0].startswith("Caroline")
    assert _contents(with_people)[0].startswith("Melanie: my kids")
    why = with_people[0].explanation
    assert why is not None and why.mechanisms["people"] > 0
    assert why.ranks["terms"] == 2 and why.ranks["people"] == 1
    # A hit that matches the name alone gets nothing for it.
    alone = next(h for h in with_people if h.observation.content == "Melanie runs.")
    assert alone.explanation is not None and "people" not in alone.explanation.mechanisms
    # An acronym is not a person.
    assert query_parse("LGBTQ events?", ranking=FINAL).names == frozenset()


def test_neighbours_the_answer_next_to_the_question_turn_is_found(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    _add(store, scope, "Caroline: did you paint anything this week?", **session("s1", DAY))
    _add(store, scope, "Melanie: yes, a sunset over the lake", **session("s1", DAY))
    # Next in the log, but a month later in the same session id: no evidence.
    _add(store, scope, "Melanie: a quiet walk today", **session("s1", DAY + timedelta(days=30)))
    _add(store, scope, "Caroline: I will paint my room", **session("s1", DAY + timedelta(days=60)))
    # Next in the log and at the same time, but another session (or none): no evidence.
    _add(store, scope, "Melanie: a yellow kite", **session("s2", DAY + timedelta(days=60)))
    _add(store, scope, "a green kite", observed_at=DAY + timedelta(days=60))

    last_wave = _search(store, "What did she paint?", LAST_WAVE, record_access=False)
    hits = _search(store, "What did she paint?", record_access=False)

    assert "Melanie: yes, a sunset over the lake" not in _contents(last_wave)
    found = {h.observation.content: h for h in hits}
    answer = found["Melanie: yes, a sunset over the lake"]
    assert answer.explanation is not None and answer.explanation.mechanisms["neighbours"] > 0
    assert answer.matched_terms == []  # found by its neighbour alone
    assert "Melanie: a quiet walk today" not in found  # a neighbour in seq, not in time
    assert "Melanie: a yellow kite" not in found and "a green kite" not in found


def session(session_id: str, at: datetime) -> dict:
    return {"source_session_id": session_id, "observed_at": at}


def test_dates_when_questions_prefer_hits_that_say_when(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    _add(store, scope, "Gene moved to Lisbon", observed_at=DAY)
    _add(store, scope, "Gene finally moved to Lisbon last year, in May", observed_at=DAY)

    assert _contents(_search(store, "Where did Gene move to Lisbon from?"))[0] == (
        "Gene moved to Lisbon"
    )
    hits = _search(store, "When did Gene move to Lisbon?")
    assert _contents(hits)[0] == "Gene finally moved to Lisbon last year, in May"
    assert hits[0].explanation is not None and hits[0].explanation.mechanisms["dates"] > 0
    assert asks_when("How long ago was her birthday?") and not asks_when("Where is it?")
    assert says_when("on 12/05/2023") and says_when("two weeks ago")
    assert not says_when("a quiet walk")


def test_min_score_window_and_access(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    old = _add(store, scope, "Rust traits and Rust lifetimes", observed_at=DAY)
    new = _add(store, scope, "a Rust service", observed_at=DAY + timedelta(days=10))

    hits = _search(store, "rust lifetimes", record_access=False)
    assert _contents(hits) == [old.content, new.content]
    assert _contents(_search(store, "rust lifetimes", min_score=hits[0].score)) == [old.content]
    after = _search(store, "rust", observed_after=DAY + timedelta(days=1))
    assert _contents(after) == [new.content]
    before = _search(store, "rust", observed_before=DAY + timedelta(days=1))
    assert _contents(before) == [old.content]

    def stored(observation):
        return eventually(
            lambda: store.observations.get(ObjectId(observation.id)),
            until=lambda o: o is not None and o.access_count >= 2,
            within=1.0,
        )

    # Counted by the searches that returned it (the one with `record_access=False` not).
    assert stored(old).access_count == 2
    assert stored(new).access_count == 1 and stored(new).last_accessed_at is not None


def test_search_round_trips_do_not_grow_with_the_data(store: MemoryStore) -> None:
    """Scopes, then the index, the best candidates, their session neighbours (three reads
    for the ranking whatever the log holds), then one unacknowledged access update."""
    scope = ScopeFactory.create(store=store, user_id="u1")
    for n in range(60):
        _add(store, scope, f"Rust note {n}", **session("s1", DAY))
    counter = CommandCounter()
    host, port = store.client.address
    client = MongoClient(host=host, port=port, tz_aware=True, event_listeners=[counter])
    try:
        counting = MemoryStore(client, store.db.name)
        counter.reset()
        hits = search_observations(store=counting, agent_id=AGENT, user_id="u1", query="rust")
        sent = dict(counter.by_name)
    finally:
        client.close()
    assert len(hits) == 10
    assert sent == {"find": 4, "update": 1}
