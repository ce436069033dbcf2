"""The documents of the search index (`streams.store.search` describes the layout): keys,
postings packed into binary, a term's head and its sealed chunks. Pure code; the
repository does the reads and writes.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from bson import Binary, ObjectId

CHUNK = 64  # postings per sealed chunk
TOP = 64  # postings of highest impact copied into a term's head
RARE_CHUNKS = 16  # sealed chunks a term may have and still be read in full
# The impact order of the top block: BM25's term part at a fixed reference length (the
# ranking's own k1, b and the scope's average length only shift it; `etf`/`elen` keep
# the bound exact whatever they are).
_K1, _B, _REF_LENGTH = 0.9, 0.4, 12.0
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
