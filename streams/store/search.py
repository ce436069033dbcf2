"""`memory_search_terms`: the text search index, built on write, postings chunked per (scope, term).

Three kinds of document share the collection, all keyed under the scope's `_id` range
("<scope hex>:..."), all carrying `k` (the term's key) and `f` (read by search):

- totals, `_id` "<scope>:": the scope's indexed observation count and total length;
- a term head, `_id` "<scope>:<term>": the document frequency `df`, the open chunk
  `pb` (the newest postings, fewer than `CHUNK`), the count `c` of sealed chunks, and
  the top block `tb`: a copy of the term's `TOP` postings of highest impact (term
  frequency against length), best first, with `etf`/`elen` bounding every posting left out of it
  (its frequency at most `etf`, its length at least `elen`; 0 when none was left out);
- a sealed chunk, `_id` "<scope>:<term>#<n>": `CHUNK` postings, their observation ids
  `o` (multikey index: a delete finds the one chunk holding a posting), and its own
  bound (`mtf`, `mlen`).

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
converts every scope (`streams.search_rebuild`).
"""

from __future__ import annotations

import bisect
import struct
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from bson import Binary, ObjectId
from pymongo import DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.client_session import ClientSession
from pymongo.database import Database
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from streams.store.indexes import IndexSpec, index
from streams.store.lookups import find_in_parts

COLLECTION = "memory_search_terms"
INDEXES: list[IndexSpec] = [
    index(COLLECTION, "k", "f"),  # search: heads, totals and the chunks of rare terms
    index(COLLECTION, "o"),  # a delete: the sealed chunk holding an observation's posting
]
CHUNK = 64  # postings per sealed chunk
TOP = 64  # postings of highest impact copied into a term's head
RARE_CHUNKS = 16  # sealed chunks a term may have and still be read in full
# The impact order of the top block: BM25's term part at a fixed reference length (the
# ranking's own k1, b and the scope's average length only shift it; `etf`/`elen` keep
# the bound exact whatever they are).
_K1, _B, _REF_LENGTH = 0.9, 0.4, 12.0
READ_ALL = False  # benchmarks only: read every chunk (what the cut costs in recall)
# Observation id, term frequency, observation length, and the observation's term
# signature: 2 bits per term of 64, so a candidate found through a rare term is known
# not to hold most common terms it was not read under (its score bound drops them).
_POSTING = struct.Struct("<12sIIQ")
_OLD_POSTING = struct.Struct("<12sII")  # `pb`, before signatures: may hold any term
ANY = (1 << 64) - 1


def term_bits(term: str) -> int:
    h = zlib.crc32(term.encode())
    return (1 << (h & 63)) | (1 << ((h >> 6) & 63))


def signature(terms: object) -> int:
    bits = 0
    for term in terms:  # type: ignore[attr-defined]
        bits |= term_bits(term)
    return bits


def may_hold(bits: int, term: str) -> bool:
    mask = term_bits(term)
    return bits & mask == mask


def term_key(scope_id: ObjectId, term: str) -> str:
    return f"{scope_id}:{term}"


def totals_key(scope_id: ObjectId) -> str:
    return f"{scope_id}:"


def chunk_key(key: str, n: int) -> str:
    return f"{key}#{n}"


class Posting(NamedTuple):
    """A named tuple: a search decodes thousands of them."""

    observation_id: ObjectId
    frequency: int
    length: int
    signature: int = ANY


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


def impact(posting: Posting) -> float:
    norm = _K1 * (1 - _B + _B * posting.length / _REF_LENGTH)
    return posting.frequency * (_K1 + 1) / (posting.frequency + norm)


@dataclass
class Head:
    """A term head, decoded: what a write changes."""

    key: str
    scope_id: ObjectId
    term: str
    df: int = 0
    open: list[Posting] = field(default_factory=list)
    chunks: int = 0
    top: list[Posting] = field(default_factory=list)
    etf: int = 0
    elen: int = 0
    top_changed: bool = False

    @property
    def rare(self) -> bool:
        return self.chunks <= RARE_CHUNKS

    @classmethod
    def decode(cls, doc: dict[str, Any]) -> Head:
        open_ = decode_postings(doc)
        if "k" not in doc:  # the earlier layout: its capped postings become the open chunk
            return cls(doc["_id"], doc["scope_id"], doc["term"], doc.get("df", 0), open_, 0, [])
        return cls(
            key=doc["_id"],
            scope_id=doc["scope_id"],
            term=doc["term"],
            df=doc.get("df", 0),
            open=open_,
            chunks=doc.get("c", 0),
            top=unpack(doc.get("tb", b"")),
            etf=doc.get("etf", 0),
            elen=doc.get("elen", 0),
        )

    def changes(self) -> dict[str, Any]:
        """What an add changed: the open chunk and the count, and the top block and its
        bound only when a posting entered it (a common term's top rarely changes)."""
        out: dict[str, Any] = {"df": self.df, "ps": pack_postings(self.open), "c": self.chunks}
        if self.top_changed:
            out.update(tb=pack_postings(self.top), etf=self.etf, elen=self.elen)
        return out

    def document(self) -> dict[str, Any]:
        return {
            "_id": self.key,
            "k": self.key,
            "f": True,
            "scope_id": self.scope_id,
            "term": self.term,
            "df": self.df,
            "ps": pack_postings(self.open),
            "c": self.chunks,
            "tb": pack_postings(self.top),
            "etf": self.etf,
            "elen": self.elen,
        }

    def add(self, posting: Posting) -> dict[str, Any] | None:
        """Append a posting; the sealed chunk to insert when the open one filled up."""
        self.df += 1
        self.open.append(posting)
        self._top_add(posting)
        if len(self.open) < CHUNK:
            return None
        self.chunks += 1
        sealed = chunk_document(self, self.chunks - 1, self.open, full=self.rare)
        self.open = []
        return sealed

    @property
    def just_turned_common(self) -> bool:
        """The last seal made the term common: its earlier chunks are no longer read."""
        return self.chunks == RARE_CHUNKS + 1

    def _top_add(self, posting: Posting) -> None:
        """The top block is kept best first: a posting enters it when it beats the last,
        which then leaves it (and widens the bound of what is left out)."""
        out = posting
        if len(self.top) < TOP or impact(posting) > impact(self.top[-1]):
            self.top_changed = True
            bisect.insort(self.top, posting, key=_descending)
            if len(self.top) <= TOP:
                return
            out = self.top.pop()
        length = out.length if self.elen == 0 else min(self.elen, out.length)
        bound = (max(self.etf, out.frequency), length)
        if bound != (self.etf, self.elen):
            self.etf, self.elen = bound
            self.top_changed = True


def _descending(posting: Posting) -> float:
    return -impact(posting)


def chunk_document(head: Head, n: int, postings: list[Posting], *, full: bool) -> dict[str, Any]:
    return {
        "_id": chunk_key(head.key, n),
        "k": head.key,
        "f": full,
        "scope_id": head.scope_id,
        "term": head.term,
        "n": n,
        "ps": pack_postings(postings),
        "o": [p.observation_id for p in postings],
        "mtf": max(p.frequency for p in postings),
        "mlen": min(p.length for p in postings),
    }


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

    def apply(self, changes: list[IndexChange], *, session: ClientSession | None = None) -> None:
        """All changes: one read of the heads they touch (and, for a delete of a posting
        already sealed, one read of the chunks holding it) and one bulk write, in the
        caller's transaction (or one of its own when none is given).

        One head rewrite per (scope, term) and one update per scope's totals, however
        many of the changes touch it. Changes of both signs in one call keep their
        order, one call per change.
        """
        if len({c.sign for c in changes}) > 1:
            for change in changes:
                self.apply([change], session=session)
            return
        if not changes:
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
        if ops:
            self.collection.bulk_write(ops, ordered=True, session=session)

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
            return _stats(docs, read_all=True)
        limit = len(keys) * (RARE_CHUNKS + 2)
        return _stats(list(self.collection.find({"k": {"$in": keys}, "f": True}, limit=limit)))

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
        the embedded store scans for a range, so never on a request path)."""
        return list(self.collection.find({"_id": {"$gte": f"{scope_id}:", "$lt": f"{scope_id};"}}))

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
    docs: list[dict[str, Any]], *, read_all: bool = False
) -> tuple[list[ScopeTotals], list[TermStats]]:
    totals: list[ScopeTotals] = []
    heads: list[dict[str, Any]] = []
    chunks: dict[str, list[Posting]] = {}
    for doc in docs:
        if doc.get("term", "") == "":
            totals.append(ScopeTotals(doc["scope_id"], doc.get("docs", 0), doc.get("length", 0)))
        elif "n" in doc:
            chunks.setdefault(doc["k"], []).extend(decode_postings(doc))
        else:
            heads.append(doc)
    stats: list[TermStats] = []
    for doc in heads:  # decoded lazily: a rare term's top block is not needed
        rare = read_all or "k" not in doc or doc.get("c", 0) <= RARE_CHUNKS
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
    return totals, stats


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


def unpack(data: bytes) -> list[Posting]:
    return [Posting(ObjectId(o), f, n, b) for o, f, n, b in _POSTING.iter_unpack(bytes(data))]


def pack_postings(postings: list[Posting]) -> Binary:
    return Binary(
        b"".join(
            _POSTING.pack(p.observation_id.binary, p.frequency, p.length, p.signature)
            for p in postings
        )
    )


def decode_postings(doc: dict[str, Any]) -> list[Posting]:
    """A document's own postings (a head's open chunk, a sealed chunk's, or an earlier
    layout's: `pb` packed without signatures, `p` an array), in any encoding."""
    if "ps" in doc:
        return unpack(doc["ps"])
    if "pb" in doc:
        return [
            Posting(ObjectId(o), f, n) for o, f, n in _OLD_POSTING.iter_unpack(bytes(doc["pb"]))
        ]
    return [Posting(p["o"], p["t"], p["n"]) for p in doc.get("p", [])]
