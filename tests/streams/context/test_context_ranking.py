"""The context's retrieval ranks as search does: what it shows as recent is left out of
the retrieved hits after the ranking, so it still ranks and lends its session support."""

from __future__ import annotations

from bson import ObjectId

from streams.context.assemble import RETRIEVED_LIMIT, context_assemble
from streams.search.index import search_in_scopes, search_scopes
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"
QUESTION = "What did I say about the kayak trip?"


def _session(store: MemoryStore) -> dict:
    """A consolidated session about a kayak trip, then one pending observation that
    names it (shown as recent) followed by a turn that only answers it."""
    user = ScopeFactory.create(store=store, user_id="u1")
    old = [
        ObservationFactory.create(store=store, scope=user, content=text, source_session_id="s1")
        for text in ("We booked the kayak trip for May.", "Kayak rental was cheap.")
    ]
    store.scopes.update_fields(ObjectId(user.id), {"pending_observation_ids": []})
    named = ObservationFactory.create(
        store=store, scope=user, content="The kayak trip was wonderful", source_session_id="s2"
    )
    answer = ObservationFactory.create(
        store=store, scope=user, content="we saw two seals near the cliffs", source_session_id="s2"
    )
    store.scopes.update_fields(ObjectId(user.id), {"pending_observation_ids": [named.id]})
    return {"user": user, "old": old, "named": named, "answer": answer}


def _search(store: MemoryStore, **kwargs) -> list[str]:
    scopes = search_scopes(store=store, agent_id=AGENT, user_id="u1")
    hits = search_in_scopes(store=store, scopes=scopes, query=QUESTION, **kwargs)
    return [h.observation.id for h in hits]


def test_an_excluded_observation_still_lends_its_neighbours_support(store: MemoryStore) -> None:
    made = _session(store)
    ranked = _search(store, limit=10)
    assert made["answer"].id in ranked  # it shares no word: its neighbour brought it

    without = _search(store, limit=10, exclude_ids=frozenset({made["named"].id}))

    assert without == [i for i in ranked if i != made["named"].id]


def test_the_context_retrieves_search_top_hits_less_what_it_shows_as_recent(
    store: MemoryStore,
) -> None:
    made = _session(store)
    ranked = _search(store, limit=10)

    result = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", message=QUESTION, log=False
    )

    assert result.decision.triggered
    shown = made["named"].id
    assert [h.observation.id for h in result.hits] == [i for i in ranked if i != shown][
        :RETRIEVED_LIMIT
    ]
    assert made["answer"].id in {h.observation.id for h in result.hits}
    assert result.found_recent == [shown]  # ranked in the top 5, shown once, as recent
    assert result.xml.count("The kayak trip was wonderful") == 1


def test_a_recent_observation_outside_the_top_is_not_reported_found(store: MemoryStore) -> None:
    made = _session(store)
    other = ObservationFactory.create(store=store, scope=made["user"], content="Buy oat milk.")
    store.scopes.update_fields(
        ObjectId(made["user"].id), {"pending_observation_ids": [made["named"].id, other.id]}
    )

    result = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", message=QUESTION, log=False
    )

    assert result.found_recent == [made["named"].id]
