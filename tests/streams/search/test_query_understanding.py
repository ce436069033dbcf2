"""Query understanding (issue 28) on small hand-made cases: dates resolved against the
time of asking, multi-hop decomposition fused by reciprocal rank, and RM3 feedback."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from streams.search.index import search_observations
from streams.search.query_understanding import decompose, expansion_terms, interleave, resolve_when
from streams.search.ranking import FINAL, query_parse
from streams.search.understood import QUESTION_FORM_STEMS
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"
NOW = datetime(2024, 5, 15, 12, tzinfo=UTC)  # a Wednesday


def _window(text: str, now: datetime = NOW) -> tuple[datetime, datetime] | None:
    resolved = resolve_when(text, now=now)
    return None if resolved is None else resolved[:2]


def _day(month: int, day: int, year: int = 2024) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def test_dates_resolve_against_the_time_of_asking() -> None:
    assert _window("What did I eat yesterday?") == (_day(5, 14), _day(5, 15))
    assert _window("what did we plan today") == (_day(5, 15), _day(5, 16))
    # Last week: Monday to Monday of the week before this one.
    assert _window("Where did I go last week?") == (_day(5, 6), _day(5, 13))
    assert _window("anything last weekend?") == (_day(5, 11), _day(5, 13))
    assert _window("what happened last month") == (_day(4, 1), _day(5, 1))
    # "in May": the latest May that has begun; a month still to come is last year's.
    assert _window("What did I buy in May?") == (_day(5, 1), _day(6, 1))
    assert _window("What did I buy in June?") == (_day(6, 1, 2023), _day(7, 1, 2023))
    assert _window("Where did I go in March 2022?") == (_day(3, 1, 2022), _day(4, 1, 2022))
    assert _window("what did I read in 2023") == (_day(1, 1, 2023), _day(1, 1, 2024))
    start, end = _window("who did I meet two weeks ago?") or (NOW, NOW)
    assert start <= NOW - timedelta(days=14) < end
    assert _window("I may go there") is None and _window("Where is Lisbon?") is None
    assert _window("How many pets, as of December 2023?") is None  # "as of": up to, not then


def test_dates_the_phrase_leaves_the_query_terms_once_resolved() -> None:
    parsed = query_parse("What did I buy in May?", ranking=FINAL, now=NOW)
    assert parsed.terms == ["buy"] and parsed.window == (_day(5, 1), _day(6, 1))
    assert query_parse("What did I buy in May?", ranking=FINAL).window is None  # no time
    off = query_parse("What did I buy in May?", ranking=replace(FINAL, when=False), now=NOW)
    assert off.window is None and "may" in off.terms


def test_dates_hits_observed_in_the_named_time_come_first(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(
        store=store, scope=scope, content="bought running shoes", observed_at=_day(5, 8)
    )
    ObservationFactory.create(
        store=store, scope=scope, content="bought new running shoes", observed_at=_day(5, 14)
    )

    def ask(ranking=FINAL) -> list[str]:
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id="u1",
            query="What shoes did I buy last week?",
            ranking=ranking,
            now=NOW,
            record_access=False,
        )
        return [h.observation.content for h in hits]

    assert ask() == ["bought running shoes", "bought new running shoes"]
    assert ask(replace(FINAL, when=False))[0] == "bought new running shoes"  # the newer


def test_multihop_a_question_joining_two_things_is_asked_in_parts() -> None:
    def parts(text: str) -> list[str]:
        names = query_parse(text, ranking=FINAL).names
        return decompose(text, names=names, ignore=QUESTION_FORM_STEMS)

    assert parts("What did Melanie realize after the charity race?") == [
        "What did Melanie realize",
        "the charity race Melanie",
    ]
    # "What did Melanie do" says nothing beyond her name: the other part is the whole query.
    assert parts("What did Melanie do after the charity race?") == []
    assert parts("What does Gene paint and where does he run?") == [
        "What does Gene paint",
        "where does he run Gene",
    ]
    assert parts("When did Caroline and Melanie go camping?") == []  # two people, one thing
    assert parts("What kind of music does Gene like?") == []


def test_multihop_lists_are_interleaved_the_whole_query_first() -> None:
    assert interleave([["a", "b", "c"], ["b", "d"], ["e"]]) == ["a", "b", "e", "d", "c"]
    assert interleave([]) == []


def test_multihop_finds_the_event_a_part_names(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    for i in range(20):
        ObservationFactory.create(store=store, scope=scope, content=f"sunny weather, day {i}")
    for i in range(5):
        ObservationFactory.create(
            store=store, scope=scope, content=f"Melanie made pottery with the kids, bowl {i}"
        )
    ObservationFactory.create(store=store, scope=scope, content="the race was exhausting")

    def ask(multihop: bool) -> list[str]:
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id="u1",
            query="What pottery did Melanie make with the kids after the race?",
            ranking=replace(FINAL, multihop=multihop, neighbours=False),
            limit=3,
            record_access=False,
        )
        return [h.observation.content for h in hits]

    assert "the race was exhausting" not in ask(False)  # the pottery outweighs it
    assert "the race was exhausting" in ask(True)  # "the race Melanie", asked alone


def test_prf_expansion_takes_the_top_hits_common_terms_not_the_query() -> None:
    texts = [("hiking trail in the mountains, long trail", 2.0), ("mountain trail camping", 1.0)]
    expand = expansion_terms(texts, query=["hike"], count=2, weight=0.4)
    assert list(expand) == ["trail", "mountain"]
    assert expand["trail"] == 0.4 and 0 < expand["mountain"] < 0.4
    assert expansion_terms(texts, query=["trail"], count=1, weight=0.4).keys() == {"mountain"}
    assert expansion_terms([], query=["hike"], count=2, weight=0.4) == {}


def test_prf_a_second_pass_finds_what_the_top_hits_talk_about(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="went camping: tent by the lake")
    ObservationFactory.create(store=store, scope=scope, content="camping again, tent and lake")
    ObservationFactory.create(store=store, scope=scope, content="the lake was freezing at dawn")
    ObservationFactory.create(store=store, scope=scope, content="bought a new phone")

    def ask(prf: bool) -> list[str]:
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id="u1",
            query="camping trips",
            ranking=replace(FINAL, prf=prf, prf_docs=2, neighbours=False),
            record_access=False,
        )
        return [h.observation.content for h in hits]

    assert "the lake was freezing at dawn" not in ask(False)
    assert ask(True)[2] == "the lake was freezing at dawn"
    assert "bought a new phone" not in ask(True)
