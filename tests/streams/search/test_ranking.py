"""Each ranking mechanism on small hand-made cases (the benchmark measures the figure):
term weighting, question-form words, people, session neighbours, dates; and the
explanation, `min_score`, the observed-time window and search counting as an access."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import CommandCounter
from streams.core.documents import Observation, Scope
from streams.search.index import search_observations
from streams.search.ranking import (
    FINAL,
    LAST_WAVE,
    POOL,
    PREVIOUS,
    SHORT_B,
    SHORT_K1,
    Candidate,
    Ranking,
    TermWeights,
    asks_when,
    query_parse,
    term_stage,
    term_weights,
)
from streams.search.relevance import relevance
from streams.search.rerank import (
    PROXIMITY_REACH,
    neighbour_stage,
    proximity_score,
    query_positions,
    says_when,
)
from streams.store import MemoryStore
from streams.store.postings import Posting
from streams.store.search import ScopeTotals, TermStats
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
        weights = term_weights(totals=totals, stats=stats, ranking=ranking)
        found = term_stage(stats=stats, weights=weights)
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


def test_neighbours_reach_two_turns_either_side_halved_per_turn_further() -> None:
    """The final ranking looks two turns around a seed (the answer's follow-up, said by
    the same speaker), the turn two away gaining half the share of the next one; three
    away is not a neighbour. Reach 1 (the first round's ranking) stops at the next turn."""
    scope = ObjectId()
    turns = []
    for seq in range(1, 6):
        turn = Observation(
            scope_id=str(scope),
            agent_id=AGENT,
            content=f"turn {seq}",
            observed_at=DAY,
            source_session_id="s1",
            seq=seq,
        )
        turn.id = str(ObjectId())
        turns.append(turn)
    seed_turn = turns[0]

    def gains(ranking: Ranking) -> dict[int, float]:
        seed = Candidate(ObjectId(seed_turn.id), terms={"paint": 4.0}, observation=seed_turn)
        candidates = {seed.observation_id: seed}
        neighbour_stage(
            candidates=candidates,
            seeds=[seed],
            neighbours=turns[1:],
            reach=ranking.reach,
            share=ranking.share,
        )
        return {
            c.observation.seq: c.mechanisms["neighbours"]
            for c in candidates.values()
            if c.observation is not None and "neighbours" in c.mechanisms
        }

    final = gains(FINAL)
    assert set(final) == {2, 3}  # seq 4 is three turns away
    assert final[2] == FINAL.share * 4.0
    assert final[3] == final[2] / 2
    assert set(gains(PREVIOUS)) == {2}


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
    between = (relevance(hits[0].score) + relevance(hits[1].score)) / 2
    assert _contents(_search(store, "rust lifetimes", min_score=between)) == [old.content]
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
    """Scopes and the agent (its ranking settings, one document by id), then the index, the
    best candidates, their session neighbours (three reads for the ranking whatever the
    log holds), then one unacknowledged access update."""
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
    assert sent == {"find": 5, "update": 1}


def test_proximity_query_terms_said_together_beat_the_same_terms_apart(
    store: MemoryStore,
) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    # Same terms, same frequencies, same length: only where the words sit differs.
    together = _add(store, scope, "a poetry reading at the library was fun, books too", **at(DAY))
    apart = _add(store, scope, "poetry is fun, and so are books before bed and reading", **at(DAY))
    query = "What poetry reading did she go to?"
    alone = replace(LAST_WAVE, proximity=True)

    without = _search(store, query, LAST_WAVE, record_access=False)
    hits = _search(store, query, alone, record_access=False)

    assert _contents(without)[0] == apart.content  # a tie: the newer first
    assert _contents(hits) == [together.content, apart.content]
    why = hits[0].explanation
    assert why is not None and why.mechanisms["proximity"] > 0
    assert why.ranks["terms"] == 2 and why.ranks["proximity"] == 1
    assert hits[1].explanation is not None and "proximity" not in hits[1].explanation.mechanisms


def test_proximity_score_counts_close_pairs_of_different_terms_only() -> None:
    weights = TermWeights(idf={"poetri": 2.0, "read": 1.0}, average_length=10, k1=0.9, b=0.0)
    near = proximity_score([(0, "poetri"), (1, "read")], weights, 10)
    farther = proximity_score([(0, "poetri"), (3, "read")], weights, 10)
    assert near > farther > 0
    assert proximity_score([(0, "poetri"), (PROXIMITY_REACH + 1, "read")], weights, 10) == 0
    assert proximity_score([(0, "poetri"), (1, "poetri")], weights, 10) == 0  # one term
    # Stop words keep their place: "made for a church" is 3 words apart.
    assert query_positions("I made it for a local church", frozenset({"made", "church"})) == [
        (1, "made"),
        (6, "church"),
    ]


def test_support_a_match_whose_session_talks_about_it_beats_a_lone_one(
    store: MemoryStore,
) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    _add(store, scope, "Caroline: we went to a pottery class", **session("s1", DAY))
    backed = _add(store, scope, "Melanie: the pottery bowl came out great", **session("s1", DAY))
    _add(store, scope, "Caroline: I love that bowl", **session("s1", DAY))
    later = DAY + timedelta(days=3)
    lone = _add(store, scope, "Melanie: the pottery bowl at the shop", **session("s2", later))
    _add(store, scope, "Caroline: nice weather today", **session("s2", later))
    query = "What pottery bowl?"
    neighbours = replace(LAST_WAVE, neighbours=True, seeds=POOL)

    without = _search(store, query, neighbours, record_access=False)
    hits = _search(store, query, replace(neighbours, support=True), record_access=False)

    assert _contents(without).index(lone.content) < _contents(without).index(backed.content)
    assert _contents(hits).index(backed.content) < _contents(hits).index(lone.content)
    found = {h.observation.content: h.explanation for h in hits}
    assert found[backed.content] is not None and found[backed.content].mechanisms["support"] > 0
    # Its neighbour says nothing of pottery or bowls: no support.
    assert found[lone.content] is not None and "support" not in found[lone.content].mechanisms


def test_names_a_person_asked_about_weighs_at_most_the_topic_terms() -> None:
    scope = ObjectId()
    totals = [ScopeTotals(scope_id=scope, documents=1000, length=10_000)]
    stats = [
        TermStats(scope, "melani", 20),  # rare in a scope full of other texts
        TermStats(scope, "camp", 100),
        TermStats(scope, "lake", 50),
    ]
    names = frozenset({"melani"})
    plain = term_weights(totals=totals, stats=stats, ranking=LAST_WAVE, names=names)
    capped = term_weights(
        totals=totals, stats=stats, ranking=replace(LAST_WAVE, names=True), names=names
    )
    assert plain is not None and capped is not None
    assert plain.idf["melani"] > plain.idf["camp"]
    assert capped.idf["melani"] == capped.idf["camp"]  # the least weighted other term
    assert capped.idf["lake"] == plain.idf["lake"]
    # A name asked about alone keeps its weight: there is no topic to weigh it against.
    only = term_weights(
        totals=totals, stats=stats[:1], ranking=replace(LAST_WAVE, names=True), names=names
    )
    assert only is not None and only.idf["melani"] == plain.idf["melani"]


def at(when: datetime) -> dict:
    return {"observed_at": when}


def test_neighbour_terms_a_neighbour_entering_the_candidates_scores_its_own_text() -> None:
    scope = ObjectId()
    seed_obs = Observation(
        scope_id=str(scope),
        agent_id=AGENT,
        content="Caroline: what got you into running?",
        observed_at=DAY,
        source_session_id="s1",
        seq=1,
    )
    answer = Observation(
        scope_id=str(scope),
        agent_id=AGENT,
        content="Melanie: running clears my head",
        observed_at=DAY,
        source_session_id="s1",
        seq=2,
    )
    seed_obs.id, answer.id = str(ObjectId()), str(ObjectId())
    weights = TermWeights(idf={"run": 2.0, "head": 1.0}, average_length=5, k1=0.9, b=0.0)
    query = query_parse("running head", ranking=FINAL)

    def found(own_terms: bool) -> dict:
        seed = Candidate(ObjectId(seed_obs.id), terms={"run": 2.0}, observation=seed_obs)
        candidates = {seed.observation_id: seed}
        neighbour_stage(
            candidates=candidates,
            seeds=[seed],
            neighbours=[answer],
            query=query,
            weights=weights,
            own_terms=own_terms,
        )
        return candidates[ObjectId(answer.id)].terms

    assert found(own_terms=False) == {}  # found through its neighbour alone
    assert set(found(own_terms=True)) == {"run", "head"}
