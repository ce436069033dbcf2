"""A single add's postings go in as one pending document (in the add's transaction) and
are folded into the term heads behind (`streams.store.search_pending`): a search finds
the observation at once, ranks it as after the fold, and the folded index is exact."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.search.index import search_in_scopes
from streams.search.index_rebuild import search_index_actual, search_index_expected
from streams.search.text import term_counts
from streams.store import MemoryStore, search_pending
from streams.store.postings import totals_key
from streams.store.privacy import PrivacyRepository
from streams.store.search import IndexChange

AGENT = "a1"


@pytest.fixture
def unfolded(monkeypatch: pytest.MonkeyPatch) -> list[set[ObjectId]]:
    """The folder left out: what the adds asked it to fold, and nothing folded."""
    asked: list[set[ObjectId]] = []
    monkeypatch.setattr(search_pending, "fold_later", lambda _key, _fold, ids: asked.append(ids))
    return asked


def _scope(store: MemoryStore):
    scope, _ = scope_get_or_create(
        store=store, key=ScopeKey(agent_id=AGENT, scope_type="individual", user_id="u1")
    )
    return scope


def _pending(store: MemoryStore, scope_id: str) -> list[dict]:
    query = {"k": totals_key(ObjectId(scope_id)), "f": True, "d": True}
    return list(store.search_index.collection.find(query, limit=100))


def _ranked(store: MemoryStore, scope_id: str, query: str) -> list[tuple[str, float]]:
    scope = store.scopes.get(ObjectId(scope_id))
    hits = search_in_scopes(store=store, scopes=[scope], query=query)
    return [(h.observation.content, round(h.score, 9)) for h in hits]


def test_a_single_add_is_searched_at_once_and_ranks_as_after_its_fold(store, unfolded):
    scope = _scope(store)
    observation_add(store=store, scope=scope, content="Gene prefers rust over go.")
    observation_add(store=store, scope=_scope(store), content="Gene drinks rust coloured tea.")
    observation_add(store=store, scope=_scope(store), content="Tea on Fridays.")
    assert len(_pending(store, scope.id)) == 3
    assert unfolded == [{ObjectId(scope.id)}] * 3
    totals, _ = store.search_index.read([ObjectId(scope.id)], [])
    assert [t.documents for t in totals] == [3]

    before = _ranked(store, scope.id, "rust tea")
    assert {content for content, _ in before} == {
        "Gene prefers rust over go.",
        "Gene drinks rust coloured tea.",
        "Tea on Fridays.",
    }
    assert store.search_index.fold({ObjectId(scope.id)}) == 3
    assert _pending(store, scope.id) == []
    assert _ranked(store, scope.id, "rust tea") == before
    assert search_index_actual(store=store, scope_id=scope.id) == search_index_expected(
        store=store, scope_id=scope.id
    )


def test_deleting_an_observation_still_pending_folds_it_first(store, unfolded):
    scope = _scope(store)
    kept = observation_add(store=store, scope=scope, content="Budget is 500 euros.")
    gone = observation_add(store=store, scope=_scope(store), content="Budget for Lisbon.")
    observation_delete(store=store, observation=gone)
    assert _pending(store, scope.id) == []
    assert [c for c, _ in _ranked(store, scope.id, "budget lisbon")] == [kept.content]
    assert search_index_actual(store=store, scope_id=scope.id) == search_index_expected(
        store=store, scope_id=scope.id
    )


def test_the_folder_takes_what_the_adds_queued(store):
    scope = _scope(store)
    observation_add(store=store, scope=scope, content="Standup at nine.")
    search_pending.flush()
    assert _pending(store, scope.id) == []
    assert [c for c, _ in _ranked(store, scope.id, "standup")] == ["Standup at nine."]


def test_pruning_dead_terms_keeps_a_pending_add_that_holds_one(store, unfolded):
    """A term's head left at df 0 (its last observation deleted) is pruned with its chunks,
    never with a later add's pending document that holds the term again."""
    scope = _scope(store)
    gone = observation_add(store=store, scope=scope, content="Lisbon trip.")
    store.search_index.fold({ObjectId(scope.id)})
    store.search_index.apply(  # the delete's index change alone: the head stays, at df 0
        [
            IndexChange(
                scope_id=ObjectId(scope.id),
                observation_id=ObjectId(gone.id),
                counts=dict(term_counts(gone.content)),
                sign=-1,
            )
        ]
    )
    later = observation_add(store=store, scope=_scope(store), content="Lisbon again.")
    assert len(_pending(store, scope.id)) == 1
    PrivacyRepository(store.db).prune_search_terms(ObjectId(scope.id), ["lisbon"])
    assert [d["oid"] for d in _pending(store, scope.id)] == [ObjectId(later.id)]
    assert [c for c, _ in _ranked(store, scope.id, "lisbon")] == ["Lisbon again."]
