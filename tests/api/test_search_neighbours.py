"""Session neighbours through `GET /search`, in every scope type: the turns after the one
that names the topic are found up to two turns away, with their share of its score."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from streams.search.ranking import FINAL
from streams.store import MemoryStore
from tests.api.conftest import API
from tests.factories import ObservationFactory, ScopeFactory

TURNS = [
    "Caroline: did you paint anything this week?",
    "Melanie: yes, a sunset over the lake",  # one turn after the match
    "Melanie: my kids chose the colours",  # two turns after
    "Jon: lunch is ready downstairs",  # three turns after: not a neighbour
]
SCOPES = {
    "individual": ({"user_id": "u1"}, {"user_id": "u1"}),
    "group": ({"group": True, "group_id": "g1"}, {"group_id": "g1"}),
    "collective": ({"collective": True}, {}),
    "shard": ({"shard": True, "name": "billing"}, {}),
}


@pytest.mark.parametrize("scope_type", list(SCOPES))
def test_search_finds_the_turns_after_a_match_up_to_two_away(
    api: Client, store: MemoryStore, scope_type: str
) -> None:
    traits, params = SCOPES[scope_type]
    scope = ScopeFactory.create(store=store, **traits)
    at = datetime(2024, 5, 1, 12, tzinfo=UTC)
    for text in TURNS:
        ObservationFactory.create(
            store=store, scope=scope, content=text, source_session_id="s1", observed_at=at
        )

    response = api.get(
        f"{API}/agents/agent-1/search",
        {"q": "What did she paint?", "scope_id": scope.id, "explain": "true", **params},
    )

    assert response.status_code == 200
    hits = {i["observation"]["content"]: i for i in response.json()["items"]}
    assert set(hits) == set(TURNS[:3])
    match = hits[TURNS[0]]
    assert match["observation"]["scope_id"] == scope.id
    next_turn = hits[TURNS[1]]["explanation"]["mechanisms"]["neighbours"]
    two_away = hits[TURNS[2]]["explanation"]["mechanisms"]["neighbours"]
    assert next_turn == pytest.approx(FINAL.share * match["score"], rel=1e-4)
    assert two_away == pytest.approx(next_turn / 2, rel=1e-4)
    assert hits[TURNS[2]]["matched_terms"] == []  # found by its session alone
