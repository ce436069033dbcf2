"""Search's one read of the index is served by an index on the engine itself, not only in
shape: the query guard checks that a filter leads with an indexed field, but the embedded
store walks a compound index only as equalities then one `$in` or range, and on (k, f)
it scanned the whole collection for `{k: {$in}, f: true}` (every scope's index, on every
search)."""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from streams.store import MemoryStore
from streams.store.search import IndexChange


class Recording:
    """The index collection, recording the filters `find` is given."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.filters: list[dict[str, Any]] = []

    def find(self, filter: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        self.filters.append(filter)
        return self.collection.find(filter, *args, **kwargs)


def stages(plan: dict[str, Any]) -> list[str]:
    found = [plan.get("stage", "")]
    for key in ("inputStage", "queryPlan"):
        if key in plan:
            found += stages(plan[key])
    for child in plan.get("inputStages", []):
        found += stages(child)
    return found


def test_the_search_read_walks_an_index_not_the_collection(store: MemoryStore) -> None:
    scope, other = ObjectId(), ObjectId()
    changes = [
        IndexChange(s, ObjectId(), {"coffee": 1, f"w{i}": 1}, +1)
        for s in (scope, other)
        for i in range(40)
    ]
    store.search_index.insert_fresh(changes)
    recording = Recording(store.search_index.collection)
    real = store.search_index.collection
    store.search_index.collection = recording  # type: ignore[assignment]
    try:
        totals, stats = store.search_index.read([scope], ["coffee", "w3"])
    finally:
        store.search_index.collection = real
    assert [t.documents for t in totals] == [40]
    assert sorted((s.term, s.document_frequency) for s in stats) == [("coffee", 40), ("w3", 1)]
    [filter] = recording.filters
    explained = real.find(filter, limit=100).explain()
    plan = stages(explained["queryPlanner"]["winningPlan"])
    assert "COLLSCAN" not in plan
    assert "IXSCAN" in plan
    assert (
        explained["executionStats"]["totalDocsExamined"] == explained["executionStats"]["nReturned"]
    )
