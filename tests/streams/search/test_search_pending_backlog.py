"""A search finds every pending posting, however far the background fold fell behind.

A search reads each scope's heads and pending documents in one query with a bounded
limit (`SearchIndexRepository.read`). Under load the fold (`streams.store.search_pending`)
fell behind: with more pending documents than that limit holds, the rest were cut off,
and the search missed observations or ranked by cut-off term frequencies (a search test
failed so on a loaded run). Such a read now folds the scope first and reads again.
"""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.memory.observation_batch import BatchItem, observation_batch_add
from streams.memory.observations import observation_add
from streams.search.index import search_in_scopes
from streams.store import MemoryStore, search_pending
from tests.streams.search.test_search_index_exact import individual

BACKLOG = 45  # with the first one, within the 50 a search returns at most


@pytest.mark.parametrize("read_limit", [5, 2000])
def test_a_backlog_larger_than_one_read_is_folded_and_found(
    store: MemoryStore, monkeypatch, read_limit: int
) -> None:
    monkeypatch.setattr(search_pending, "READ_LIMIT", read_limit)
    scope = individual(store, "u1")
    with search_pending.held():  # the fold is behind: nothing folds in the background
        old = observation_add(store=store, scope=scope, content="Gene drinks coffee in Berlin.")
        items = [
            BatchItem(content=f"coffee cup number n{n} was strong", client_id=f"c{n}")
            for n in range(BACKLOG)
        ]
        observation_batch_add(store=store, scope=scope, items=items)
        fresh = store.scopes.get(ObjectId(scope.id))
        hits = search_in_scopes(store=store, scopes=[fresh], query="coffee", limit=50)
        best = search_in_scopes(store=store, scopes=[fresh], query="coffee berlin", limit=3)
    assert len(hits) == BACKLOG + 1  # every one, pending or folded
    assert best[0].observation.id == old.id  # ranked by whole term counts
