"""The index entries one add writes, per collection: a table of `benchmarks store_floor`.

Counted from what the add changed, not from the store's own statistics (the embedded
store keeps none): every collection of a small database is read before and after one
`do_observation_add` (the search fold held, so only the add's own transaction is
counted; the fold rewrites the heads behind, once for the adds of its interval), and
each declared index is applied to the documents: a new document adds each of its keys
(an array field: one per element; a sparse index skips a document without the field),
a removed one deletes them, a changed one deletes its old keys and inserts its new
ones where they differ. The `_id` index counts one per document inserted or removed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bson import ObjectId

from streams.store.indexes import IndexSpec

Keys = set[tuple[Any, ...]]


def _value(doc: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def index_keys(spec: IndexSpec, doc: dict[str, Any]) -> Keys:
    """The keys `doc` puts in the index `spec` (none: a sparse index without its field)."""
    values = [_value(doc, name) for name, _ in spec.keys]
    if spec.options.get("sparse") and all(v is None for v in values):
        return set()
    keys: Keys = {()}
    for value in values:
        choices = value if isinstance(value, list) and value else [value]
        keys = {(*key, repr(choice)) for key in keys for choice in choices}
    return keys


def _snapshot(db: Any) -> dict[str, dict[Any, dict[str, Any]]]:
    return {
        name: {d["_id"]: d for d in db[name].find({}).limit(10**6)}
        for name in db.list_collection_names()
    }


def entries_of_one_add(
    db: Any, specs: list[IndexSpec], add: Callable[[], None]
) -> list[list[object]]:
    """Per collection the add wrote: documents inserted, changed, removed, and the index
    entries written (inserted plus deleted), with the `_id` index's share."""
    before = _snapshot(db)
    add()
    after = _snapshot(db)
    rows: list[list[object]] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, {}), after.get(name, {})
        inserted = [new[i] for i in new.keys() - old.keys()]
        removed = [old[i] for i in old.keys() - new.keys()]
        changed = [(old[i], new[i]) for i in old.keys() & new.keys() if old[i] != new[i]]
        entries = len(inserted) + len(removed)  # the `_id` index
        for spec in (s for s in specs if s.collection == name):
            entries += sum(len(index_keys(spec, d)) for d in inserted + removed)
            for was, now in changed:
                entries += len(index_keys(spec, was) ^ index_keys(spec, now))
        if inserted or removed or changed:
            rows.append([name, len(inserted), len(changed), len(removed), entries])
    totals = [sum(int(str(row[i])) for row in rows) for i in range(1, 5)]
    return [*rows, ["all", *totals]]


def count_one_add(client: Any, store_type: Any, specs: list[IndexSpec]) -> list[list[object]]:
    """One hand add into a group scope that holds a few observations already."""
    from streams.actions.base import Actor
    from streams.actions.observations import do_observation_add
    from streams.memory.scopes import ScopeKey, scope_get_or_create
    from streams.store import search_pending

    name = f"floor_entries_{ObjectId()}"
    store = store_type(client, name)
    store.ensure_indexes()
    scope, _ = scope_get_or_create(
        store=store, key=ScopeKey(agent_id="bench", scope_type="group", group_id="g")
    )
    actor = Actor.api("bench")

    def add(n: int) -> None:
        do_observation_add(
            store=store,
            actor=actor,
            scope=store.scopes.get(ObjectId(scope.id)),
            content=f"Caroline said on day {n} that she enjoys painting landscapes by the lake",
        )

    try:
        for n in range(3):
            add(n)
        search_pending.flush()
        with search_pending.held():
            return entries_of_one_add(client[name], specs, lambda: add(99))
    finally:
        client.drop_database(name)
