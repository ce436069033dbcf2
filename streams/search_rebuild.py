"""The search index rebuilt from the observations themselves: the reference the write
path (add, batch, edit, delete, forget) must match at every step, and the repair for a
scope whose index is in doubt (`manage.py rebuild_search_index`).

Postings are compared as sets: the write path appends an edited observation's postings
at the end, a rebuild keeps log order, and the ranking reads postings as a set.
"""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from streams.documents import Observation
from streams.exceptions import NotFound
from streams.ids import require_object_id
from streams.search_text import term_counts
from streams.store import MemoryStore
from streams.store.search import IndexChange, decode_postings, fresh_documents

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
        live += [o for o in window if not o.deleted]
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
    """`_id` → what search reads of it. A totals document of an empty scope equals none."""
    out: dict[str, Any] = {}
    for doc in docs:
        if doc.get("term", "") == "":
            if doc.get("docs", 0) or doc.get("length", 0):
                out[doc["_id"]] = ("totals", doc.get("docs", 0), doc.get("length", 0))
            continue
        postings = frozenset(decode_postings(doc))
        out[doc["_id"]] = ("term", doc.get("df", 0), postings)
    return out
