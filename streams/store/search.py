"""`memory_search_terms`: the text search index, built on write, postings chunked per (scope, term).

Four kinds of document share the collection, all keyed under the scope's `_id` range
("<scope hex>:..."), all carrying `k` (the term's key) and `f` (read by search):

- totals, `_id` "<scope>:": the scope's indexed observation count and total length;
- a term head, `_id` "<scope>:<term>": the document frequency `df`, the open chunk
  `pb` (the newest postings, fewer than `CHUNK`), the count `c` of sealed chunks, and
  the top block `tb`: a copy of the term's `TOP` postings of highest impact (term
  frequency against length), best first, with `etf`/`elen` bounding every posting left out of it
  (its frequency at most `etf`, its length at least `elen`; 0 when none was left out);
- a sealed chunk, `_id` "<scope>:<term>#<n>": `CHUNK` postings, their observation ids
  `o` (multikey index: a delete finds the one chunk holding a posting), and its own
  bound (`mtf`, `mlen`);
- a pending add, `_id` "<scope>:+<observation>" (`d` true): a single add's postings,
  written in its transaction and folded into the heads behind (`search_pending`).

An add appends to the open chunk of each of its terms (and to the top block when it
beats it): one head rewrite per term, bounded by `CHUNK + TOP` postings whatever the
scope holds; a full open chunk is sealed by inserting it once. A term is rare while it
has at most `RARE_CHUNKS` sealed chunks: then its chunks carry `f` true and search reads
them all. When it passes that, its chunks are flipped to `f` false once, and search reads
only its head: the open chunk and the top block, and completes the score of the
candidates it found through other terms from their text (`streams.search`). So a search
is one query `{k: {$in: keys}, f: true}` whatever the scope size, every posting stays
reachable, and only common terms are cut, by their score bound.

A delete takes the posting out of the open chunk, or rewrites the one sealed chunk that
holds it (found by `o`), and out of the top block, in the caller's transaction. Postings
are packed into binary (`ps`, 28 bytes each: the observation id, the term's frequency
and the observation's length as little-endian uint32, and a 64-bit signature of the
observation's terms). Documents of the earlier layouts (no
`k`: one document per term holding the newest 200 postings, as `pb` or as an array `p`)
are converted on their next write, but search does not read them (a second query on
every search of an empty scope): after upgrading, `manage.py rebuild_search_index --all`
converts every scope (`streams.search.index_rebuild`).

Long because: one collection's four document shapes (totals, heads, sealed chunks,
pending adds) and the writes that keep the chunk layout's invariant; split, the layout
would be kept by several modules.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from bson import ObjectId
from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.errors import PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from streams.store import postings as index_format
from streams.store import search_pending
from streams.store.indexes import IndexSpec, RetiredIndex, index
from streams.store.lookups import find_in_parts
from streams.store.postings import (
    Head,
    Posting,
    decode_postings,
    pack_postings,
    signature,
    term_key,
    totals_key,
    unpack,
)
from streams.store.transaction_gate import current_gate
from streams.store.write_batch import WriteBatch

COLLECTION = "memory_search_terms"
INDEXES: list[IndexSpec] = [
    index(COLLECTION, "k", "f"),  # a fold: a scope's pending adds; a flip: a term's chunks
    # Search, `{k: {$in}, f: true}`: the equality leads. The embedded store walks a compound
    # index only as equalities then one `$in` or range, so on (k, f) it scanned the whole
    # collection (13,278 documents at 100,000 observations: 9 ms of its CPU per search,
    # 3 ms on (f, k)), and the scan grows with every scope's index.
    index(COLLECTION, "f", "k"),
    # A delete: the sealed chunk holding an observation's posting. Sparse: only sealed
    # chunks hold `o` (every head rewrite and pending add wrote a null entry).
    IndexSpec(collection=COLLECTION, keys=(("o", 1),), name="o_sparse", options={"sparse": True}),
]
RETIRED_INDEXES = (RetiredIndex(COLLECTION, "o_1", "replaced by the sparse o_sparse"),)
FOLD_ATTEMPTS = 5
READ_ALL = False  # benchmarks only: read every chunk (what the cut costs in recall)


@dataclass
class TermStats:
    """What the index knows of one term in one scope. `complete`: `postings` are all of
    them; otherwise the ones left out have a frequency at most `bound_frequency` and a
    length at least `bound_length`."""

    scope_id: ObjectId
    term: str
    document_frequency: int = 0
    postings: list[Posting] = field(default_factory=list)
    complete: bool = True
    bound_frequency: int = 0
    bound_length: int = 0


@dataclass
class ScopeTotals:
    scope_id: ObjectId
    documents: int = 0
    length: int = 0


@dataclass
class IndexChange:
    """One observation entering (+1) or leaving (-1) its scope's index."""

    scope_id: ObjectId
    observation_id: ObjectId
    counts: dict[str, int]
    sign: int

    @property
    def length(self) -> int:
        return sum(self.counts.values())

    @cached_property
    def signature(self) -> int:
        return signature(self.counts)

    def posting(self, term: str) -> Posting:
        return Posting(self.observation_id, self.counts[term], self.length, self.signature)


LAYOUT_ID = "~layout"  # sorts after every "<scope hex>:..." key; search never reads it
LAYOUT = 2  # 1: one document per (scope, term), newest 200 postings; 2: chunks


class SearchIndexRepository:
    def __init__(self, db: Database) -> None:
        self.collection = db[COLLECTION]

    def layout(self) -> int | None:
        """The layout the whole index is known to be in; None when not recorded (a store
        an earlier version wrote, or a new one)."""
        marker = self.collection.find_one({"_id": LAYOUT_ID})
        return int(marker["layout"]) if marker else None

    def set_layout(self, layout: int) -> None:
        self.collection.update_one({"_id": LAYOUT_ID}, {"$set": {"layout": layout}}, upsert=True)

    def is_empty(self) -> bool:
        return self.collection.find_one({"_id": {"$lt": LAYOUT_ID}}, {"_id": 1}) is None

    def apply(
        self,
        changes: list[IndexChange],
        *,
        session: ClientSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None:
        """All changes: one read of the heads they touch (and, for a delete of a posting
        already sealed, one read of the chunks holding it) and one bulk write, in the
        caller's transaction (or one of its own when none is given).

        One head rewrite per (scope, term) and one update per scope's totals, however
        many of the changes touch it. Changes of both signs in one call keep their
        order, one call per change.
        """
        if len({c.sign for c in changes}) > 1:
            for change in changes:
                self.apply([change], session=session, writes=writes)
            return
        if not changes:
            return
        if writes is not None and changes[0].sign > 0:
            # A short add: one pending document per observation joins the batch, no head
            # is read or written; the heads take them behind (`search_pending`).
            assert session is not None, "a batch belongs to a transaction"
            for c in changes:
                doc = search_pending.pending_document(c.scope_id, c.observation_id, c.counts)
                writes.add(InsertOne(doc, namespace=self.collection.full_name))
            search_pending.fold_later(id(self.collection), self.fold, {c.scope_id for c in changes})
            return
        if session is None:
            # Read-modify-write: only a transaction makes a concurrent writer conflict.
            with self.collection.database.client.start_session() as own:
                own.with_transaction(
                    lambda s: self._apply(changes, s),
                    read_concern=ReadConcern("snapshot"),
                    write_concern=WriteConcern(w="majority", j=True),
                )
            return
        self._apply(changes, session)

    def _apply(self, changes: list[IndexChange], session: ClientSession) -> None:
        if changes[0].sign < 0:  # a posting still pending is folded into its head first
            self._fold({c.scope_id for c in changes}, session)
        ops = self._ops(changes, session)
        if ops:
            self.collection.bulk_write(ops, ordered=True, session=session)

    def _ops(self, changes: list[IndexChange], session: ClientSession) -> list[Any]:
        """The writes of `_apply` (collection-level: short adds join a client-level batch
        as pending documents instead, in `apply`)."""
        sign = changes[0].sign
        terms: dict[str, tuple[ObjectId, str, list[IndexChange]]] = {}
        totals: dict[ObjectId, list[IndexChange]] = {}
        for change in changes:
            for term in change.counts:
                key = term_key(change.scope_id, term)
                terms.setdefault(key, (change.scope_id, term, []))[2].append(change)
            totals.setdefault(change.scope_id, []).append(change)
        heads = find_in_parts(self.collection, "_id", list(terms), session=session)
        current = {d["_id"]: d for d in heads}
        ops: list[Any] = []
        if sign > 0:
            # Grouped by kind: an ordered bulk write sends one command per run of a kind.
            sealed: list[Any] = []
            flips: list[Any] = []
            for key, (scope_id, term, group) in terms.items():
                doc = current.get(key)
                head = Head.decode(doc) if doc is not None else Head(key, scope_id, term)
                for c in group:
                    chunk = head.add(c.posting(term))
                    if chunk is not None:
                        sealed.append(InsertOne(chunk))
                        if head.just_turned_common:
                            flips.append(
                                UpdateMany(
                                    {"k": key, "f": True, "n": {"$gte": 0}},  # chunks, not the head
                                    {"$set": {"f": False}},
                                )
                            )
                if doc is None or "k" not in doc or "p" in doc:  # new, or the earlier layout
                    ops.append(ReplaceOne({"_id": key}, head.document(), upsert=True))
                else:
                    ops.append(UpdateOne({"_id": key}, {"$set": head.changes()}))
            ops += sealed + flips
        else:
            ops += self._removals(terms, current, session)
        for scope_id, group in totals.items():
            ops.append(
                UpdateOne(
                    {"_id": totals_key(scope_id)},
                    {
                        "$inc": {
                            "docs": sign * len(group),
                            "length": sign * sum(c.length for c in group),
                        },
                        "$set": {"k": totals_key(scope_id), "f": True},
                        "$setOnInsert": {"scope_id": scope_id, "term": ""},
                    },
                    upsert=True,
                )
            )
        return ops

    def _removals(
        self,
        terms: dict[str, tuple[ObjectId, str, list[IndexChange]]],
        current: dict[str, dict[str, Any]],
        session: ClientSession,
    ) -> list[Any]:
        """Each posting out of its head's open chunk, or out of the one sealed chunk that
        holds it (read by the chunks' observation ids), and out of the top block."""
        ops: list[Any] = []
        sealed: dict[str, set[ObjectId]] = {}
        for key, (_, _, group) in terms.items():
            doc = current.get(key)
            if doc is None:
                continue  # nothing indexed under it
            head = Head.decode(doc)
            gone = {c.observation_id for c in group}
            kept = [p for p in head.open if p.observation_id not in gone]
            in_open = {p.observation_id for p in head.open} & gone
            if gone - in_open:
                sealed[key] = gone - in_open
            head.open = kept
            head.top = [p for p in head.top if p.observation_id not in gone]
            head.df -= len(group)
            ops.append(ReplaceOne({"_id": key}, head.document()))
        if sealed:
            wanted = sorted({o for ids in sealed.values() for o in ids})
            pairs = sum(len(ids) for ids in sealed.values())
            for doc in self.collection.find(
                {"o": {"$in": wanted}}, session=session, limit=pairs + len(terms) * 4 + 16
            ):
                gone = sealed.get(doc.get("k", ""), set())
                if not gone.intersection(doc["o"]):
                    continue
                left = [p for p in decode_postings(doc) if p.observation_id not in gone]
                if not left:
                    ops.append(DeleteOne({"_id": doc["_id"]}))
                    continue
                ops.append(
                    UpdateOne(
                        {"_id": doc["_id"]},
                        {
                            "$set": {
                                "ps": pack_postings(left),
                                "o": [p.observation_id for p in left],
                            }
                        },
                    )
                )
        return ops

    def fold(self, scope_ids: set[ObjectId], session: ClientSession | None = None) -> int:
        """The scopes' pending documents folded into their heads (`search_pending`), in
        the caller's transaction or one of its own; how many were folded."""
        if session is not None:
            return self._fold(scope_ids, session)
        # Not `with_transaction`: it retries for 120 s, and a folder meeting a closed
        # client or a dropped store would hang that long. A few conflicts are retried;
        # what is left stays pending (searchable) for the next fold.
        with current_gate().slot(), self.collection.database.client.start_session() as own:
            for attempt in range(FOLD_ATTEMPTS):
                own.start_transaction(
                    read_concern=ReadConcern("snapshot"),
                    write_concern=WriteConcern(w="majority", j=True),
                )
                try:
                    folded = self._fold(scope_ids, own)
                    own.commit_transaction()
                    return folded
                except PyMongoError as exc:
                    if own.in_transaction:
                        with contextlib.suppress(PyMongoError):
                            own.abort_transaction()
                    transient = exc.has_error_label("TransientTransactionError")
                    if not transient or attempt == FOLD_ATTEMPTS - 1:
                        raise
        return 0

    def _fold(self, scope_ids: set[ObjectId], session: ClientSession) -> int:
        folded = 0
        keys = [totals_key(s) for s in sorted(scope_ids)]
        while keys:
            docs = list(
                self.collection.find(
                    {"k": {"$in": keys}, "f": True, "d": True},
                    session=session,
                    limit=search_pending.READ_LIMIT,
                )
            )
            docs = [d for d in docs if search_pending.is_pending(d)]
            if not docs:
                break
            changes = [
                IndexChange(scope_id=d["scope_id"], observation_id=d["oid"], counts=d["tc"], sign=1)
                for d in docs
            ]
            ops = [DeleteMany({"_id": {"$in": [d["_id"] for d in docs]}})]
            self.collection.bulk_write(
                ops + self._ops(changes, session), ordered=True, session=session
            )
            folded += len(docs)
            if len(docs) < search_pending.READ_LIMIT:
                break
        return folded

    def read(
        self, scope_ids: list[ObjectId], terms: list[str]
    ) -> tuple[list[ScopeTotals], list[TermStats]]:
        """Totals of the scopes and stats of their terms, in one query: heads and totals,
        and the sealed chunks of rare terms (`f`). Documents of the earlier layout (no
        `k`) are not read: `rebuild_search_index --all` converts them."""
        keys = [totals_key(s) for s in scope_ids] + [
            term_key(s, t) for s in scope_ids for t in terms
        ]
        if not keys:
            return [], []
        if READ_ALL:  # every chunk of every term: the exact figure, for benchmarks
            docs = list(self.collection.find({"k": {"$in": keys}}, limit=10**9))
            return _stats(docs, read_all=True, keys=set(keys))
        limit = len(keys) * (index_format.RARE_CHUNKS + 2) + search_pending.READ_LIMIT
        query = {"f": True, "k": {"$in": keys}}
        docs = list(self.collection.find(query, limit=limit))
        if len(docs) >= limit:
            # More pending documents than one read holds (the fold fell behind, under
            # load): the rest would be cut off. Fold these scopes now, then read again.
            self.fold(set(scope_ids))
            docs = list(self.collection.find(query, limit=limit))
        return _stats(docs, keys=set(keys))

    def insert_fresh(
        self,
        changes: list[IndexChange],
        *,
        batch: int = 5000,
        session: ClientSession | None = None,
    ) -> int:
        """Bulk-build the index of scopes that have none yet (seeding, benchmarks): the same
        documents `apply` would leave, written with `insert_many`; the documents written."""
        values = fresh_documents(changes)
        for start in range(0, len(values), batch):
            self.collection.insert_many(
                values[start : start + batch], ordered=False, session=session
            )
        return len(values)

    def scope_documents(self, scope_id: ObjectId) -> list[dict[str, Any]]:
        """Every index document of one scope, by its `_id` key range (checks, rebuilds;
        the embedded store scans for a range, so never on a request path); its pending
        documents are folded first."""
        self.fold({scope_id})
        docs = self.collection.find({"_id": {"$gte": f"{scope_id}:", "$lt": f"{scope_id};"}})
        return [d for d in docs if not search_pending.is_pending(d)]

    def replace_scope(
        self, scope_id: ObjectId, changes: list[IndexChange], *, session: ClientSession
    ) -> int:
        """Inside the caller's transaction: the scope's index dropped and written anew from
        `changes` (a search sees the old index or the new one, never a half-built one)."""
        values = fresh_documents(changes)
        self.collection.delete_many(
            {"_id": {"$gte": f"{scope_id}:", "$lt": f"{scope_id};"}}, session=session
        )
        if values:
            self.collection.insert_many(values, ordered=False, session=session)
        return len(values)

    def drop_scope(self, scope_id: ObjectId) -> int:
        """Remove a scope's whole index (its key range on `_id`); the documents removed.

        Bounded on mongod; the embedded store scans the collection for an `_id` range,
        so forget user removes a scope's terms key by key instead.
        """
        result = self.collection.delete_many(
            {"_id": {"$gte": f"{scope_id}:", "$lt": f"{scope_id};"}}
        )
        return result.deleted_count


def _stats(
    docs: list[dict[str, Any]], *, keys: set[str], read_all: bool = False
) -> tuple[list[ScopeTotals], list[TermStats]]:
    totals: list[ScopeTotals] = []
    heads: list[dict[str, Any]] = []
    chunks: dict[str, list[Posting]] = {}
    pending: dict[str, dict[str, Any]] = {}
    for doc in docs:
        if search_pending.is_pending(doc):
            pending[doc["_id"]] = doc  # once, however many of its keys matched
        elif doc.get("term", "") == "":
            totals.append(ScopeTotals(doc["scope_id"], doc.get("docs", 0), doc.get("length", 0)))
        elif "n" in doc:
            chunks.setdefault(doc["k"], []).extend(decode_postings(doc))
        else:
            heads.append(doc)
    stats: list[TermStats] = []
    for doc in heads:  # decoded lazily: a rare term's top block is not needed
        rare = read_all or "k" not in doc or doc.get("c", 0) <= index_format.RARE_CHUNKS
        read = chunks.get(doc["_id"], []) if rare else unpack(doc.get("tb", b""))
        postings = {p.observation_id: p for p in read}
        postings.update((p.observation_id, p) for p in decode_postings(doc))
        stats.append(
            TermStats(
                scope_id=doc["scope_id"],
                term=doc["term"],
                document_frequency=doc.get("df", 0),
                postings=list(postings.values()),
                complete=rare or doc.get("etf", 0) == 0,
                bound_frequency=doc.get("etf", 0),
                bound_length=doc.get("elen", 0),
            )
        )
    if pending:
        _add_pending(list(pending.values()), keys, totals, stats)
    return totals, stats


def _add_pending(
    docs: list[dict[str, Any]], keys: set[str], totals: list[ScopeTotals], stats: list[TermStats]
) -> None:
    """Pending documents (`search_pending`) counted as if folded: each adds a document and
    its length to its scope's totals, and a posting (and 1 to `df`) to each asked term."""
    by_scope = {t.scope_id: t for t in totals}
    by_key = {term_key(s.scope_id, s.term): s for s in stats}
    for doc in docs:
        scope_id = doc["scope_id"]
        length, postings = search_pending.pending_postings(doc)
        scope = by_scope.get(scope_id)
        if scope is None:
            scope = by_scope[scope_id] = ScopeTotals(scope_id)
            totals.append(scope)
        scope.documents += 1
        scope.length += length
        for term, posting in postings.items():
            key = term_key(scope_id, term)
            if key not in keys:
                continue
            stat = by_key.get(key)
            if stat is None:
                stat = by_key[key] = TermStats(scope_id=scope_id, term=term)
                stats.append(stat)
            # Never also in a head: a fold deletes it in the transaction that adds it there.
            stat.document_frequency += 1
            stat.postings.append(posting)


def fresh_documents(changes: list[IndexChange]) -> list[dict[str, Any]]:
    """The index documents that adding `changes` (all +1) to an empty index leaves."""
    totals: dict[str, dict[str, Any]] = {}
    heads: dict[str, Head] = {}
    chunks: list[dict[str, Any]] = []
    for change in changes:
        key = totals_key(change.scope_id)
        doc = totals.setdefault(
            key,
            {"_id": key, "k": key, "f": True, "scope_id": change.scope_id, "term": "", "docs": 0},
        )
        doc["docs"] += 1
        doc["length"] = doc.get("length", 0) + change.length
        for term in change.counts:
            tkey = term_key(change.scope_id, term)
            head = heads.get(tkey)
            if head is None:
                head = heads[tkey] = Head(tkey, change.scope_id, term)
            sealed = head.add(change.posting(term))
            if sealed is not None:
                chunks.append(sealed)
    for chunk in chunks:
        chunk["f"] = heads[chunk["k"]].rare
    return list(totals.values()) + [h.document() for h in heads.values()] + chunks
