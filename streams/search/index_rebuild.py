"""The search index rebuilt from the observations themselves: the reference the write
path (add, batch, edit, delete, forget) must match at every step, and the repair for a
scope whose index is in doubt (`manage.py rebuild_search_index`).

Postings are compared as sets per term, whichever chunk holds them: the write path
appends an edited observation's postings at the end, a rebuild keeps log order, and
the ranking reads postings as a set. What depends on that order (which chunk, the top
block) is checked by `search_index_problems` instead: every posting in exactly one
chunk, the top block a subset bounded by `etf`/`elen`, each chunk within its bound.

A rebuild also converts a scope of an earlier layout (`rebuild_search_index --all`).
"""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from streams.core.documents import Observation
from streams.core.exceptions import NotFound
from streams.core.ids import require_object_id
from streams.search.text import term_counts
from streams.store import MemoryStore
from streams.store import postings as index_format
from streams.store import search as layout
from streams.store.postings import Head, decode_postings
from streams.store.search import IndexChange, fresh_documents

BATCH = 1000


def scope_live_observations(*, store: MemoryStore, scope_id: str) -> list[Observation]:
    """Every observation of the scope that search may return (not deleted), oldest first."""
    oid = require_object_id(scope_id, what="scope")
    scope = store.scopes.get(oid)
    if scope is None:
        return []
    live: list[Observation] = []
    for low in range(0, scope.observation_seq, BATCH):
        window = store.observations.seq_window(
            oid, low_seq=low, high_seq=min(low + BATCH, scope.observation_seq)
        )
        live += [o for o in window if not o.deleted and not o.held]
    return live


def _changes(observations: list[Observation]) -> list[IndexChange]:
    return [
        IndexChange(
            scope_id=ObjectId(o.scope_id),
            observation_id=ObjectId(o.id),
            counts=dict(term_counts(o.content)),
            sign=+1,
        )
        for o in observations
    ]


def rebuild_search_index(*, store: MemoryStore, scope_id: str) -> int:
    """Replace the scope's index by one built from its live observations, in one
    transaction; the index documents written."""
    oid = require_object_id(scope_id, what="scope")
    if store.scopes.get(oid) is None:
        raise NotFound("scope not found")
    changes = _changes(scope_live_observations(store=store, scope_id=scope_id))
    return store.in_transaction(
        lambda session: store.search_index.replace_scope(oid, changes, session=session)
    )


def search_index_expected(*, store: MemoryStore, scope_id: str) -> dict[str, Any]:
    """The scope's index as a rebuild would write it, normalised for comparison."""
    changes = _changes(scope_live_observations(store=store, scope_id=scope_id))
    return _normalised(fresh_documents(changes))


def search_index_actual(*, store: MemoryStore, scope_id: str) -> dict[str, Any]:
    """The scope's index as the write path left it, normalised for comparison."""
    oid = require_object_id(scope_id, what="scope")
    return _normalised(store.search_index.scope_documents(oid))


def _normalised(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """`_id` of each term → (df, its postings); totals → counts. A totals document of an
    empty scope equals none; a head left with nothing (before its prune) counts too."""
    out: dict[str, Any] = {}
    postings: dict[str, list[Any]] = {}
    for doc in docs:
        if doc.get("term", "") == "":
            if doc.get("docs", 0) or doc.get("length", 0):
                out[doc["_id"]] = ("totals", doc.get("docs", 0), doc.get("length", 0))
            continue
        key = doc.get("k", doc["_id"])
        postings.setdefault(key, []).extend(decode_postings(doc))
        if "n" not in doc:
            out[key] = ("term", doc.get("df", 0))
    for key, found in postings.items():
        out[key] = (*out.get(key, ("orphan chunk", None)), frozenset(found))
    return out


def search_index_problems(*, store: MemoryStore, scope_id: str) -> list[str]:
    """What breaks the layout's invariants in the scope's index (none: the reader's
    bounds and chunk reads can be trusted)."""
    oid = require_object_id(scope_id, what="scope")
    docs = store.search_index.scope_documents(oid)
    problems: list[str] = []
    seen: dict[str, list[Any]] = {}
    heads = {d["_id"]: Head.decode(d) for d in docs if d.get("term") and "n" not in d}
    for doc in docs:
        if "n" in doc:
            found = decode_postings(doc)
            seen.setdefault(doc["k"], []).extend(found)
            head = heads.get(doc["k"])
            if head is None:
                problems.append(f"{doc['_id']}: a chunk without its head")
                continue
            if doc["f"] != head.rare or doc["n"] >= head.chunks or len(found) > index_format.CHUNK:
                problems.append(f"{doc['_id']}: flag, number or size")
            if any(p.frequency > doc["mtf"] or p.length < doc["mlen"] for p in found):
                problems.append(f"{doc['_id']}: a posting above its chunk's bound")
    for key, head in heads.items():
        every = seen.get(key, []) + head.open
        ids = [p.observation_id for p in every]
        if len(ids) != len(set(ids)):
            problems.append(f"{key}: a posting in two chunks")
        if len(head.open) >= index_format.CHUNK:
            problems.append(f"{key}: the open chunk is full")
        if not set(head.top) <= set(every):
            problems.append(f"{key}: the top block holds a posting the term does not")
        out = set(every) - set(head.top)
        if any(p.frequency > head.etf or p.length < head.elen for p in out):
            problems.append(f"{key}: a posting outside the top block above its bound")
    return problems


def rebuild_all(*, store: MemoryStore) -> dict[str, int]:
    """Every scope's index rebuilt (the conversion of a store written by an earlier
    layout); scope id → documents written."""
    written: dict[str, int] = {}
    after: ObjectId | None = None
    while ids := store.scopes.ids_after(after, limit=BATCH):
        for oid in ids:
            written[str(oid)] = rebuild_search_index(store=store, scope_id=str(oid))
        after = ids[-1]
    return written


def search_layout_ensure(*, store: MemoryStore) -> int | None:
    """Convert an index an earlier layout wrote, once, and record that it is done.

    Returns the scopes converted, or None when the layout was already recorded. A new
    store is marked without work; a crash before the mark makes the next run convert
    again (a rebuild is idempotent).
    """
    if store.search_index.layout() == layout.LAYOUT:
        return None
    converted = 0 if store.search_index.is_empty() else len(rebuild_all(store=store))
    store.search_index.set_layout(layout.LAYOUT)
    return converted
