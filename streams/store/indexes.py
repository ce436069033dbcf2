"""Index declarations: each repository declares the indexes its queries need, beside them.

`ensure_indexes` applies the union idempotently, and the test-time query guard
reads the same declarations to check that every query the suite sends is served. An
index a repository no longer wants is declared retired (with why): `ensure_indexes`
drops it where it exists, before creating the rest (an index on the same keys with new
options would be refused while the old one stands).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pymongo import ASCENDING, IndexModel
from pymongo.database import Database


@dataclass(frozen=True)
class IndexSpec:
    collection: str
    keys: tuple[tuple[str, int], ...]
    unique: bool = False
    name: str | None = None
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def leading_field(self) -> str:
        return self.keys[0][0]

    def model(self) -> IndexModel:
        name = self.name or "_".join(f"{k}_{d}" for k, d in self.keys)
        return IndexModel(list(self.keys), name=name, unique=self.unique, **self.options)


def index(collection: str, *fields: str | tuple[str, int], unique: bool = False) -> IndexSpec:
    keys = tuple((f, ASCENDING) if isinstance(f, str) else f for f in fields)
    return IndexSpec(collection=collection, keys=keys, unique=unique)


@dataclass(frozen=True)
class RetiredIndex:
    """An index earlier versions created that no query needs any more: every write to
    its collection paid an entry in it."""

    collection: str
    name: str
    why: str


def apply_indexes(
    db: Database, specs: list[IndexSpec], retired: tuple[RetiredIndex, ...] = ()
) -> list[str]:
    """Drop the `retired` indexes that exist, then create the declared indexes that are
    not in place (by name, keys and options); the declared names, for the log. Every
    process asks at its start: one `listIndexes` read per collection, where `createIndexes`
    of what exists was a write command per collection, a second each on a loaded embedded
    store (three job runners starting beside 16 clients' adds stalled them that way)."""
    for old in retired:
        if old.name in db[old.collection].index_information():
            db[old.collection].drop_index(old.name)
    declared: list[str] = []
    by_collection: dict[str, list[IndexSpec]] = {}
    for spec in specs:
        by_collection.setdefault(spec.collection, []).append(spec)
    for collection, group in sorted(by_collection.items()):
        existing = db[collection].index_information()
        models = [spec.model() for spec in group]
        missing = [m for m in models if not _in_place(m.document, existing)]
        if missing:  # one of another shape under the same name fails here, as before
            db[collection].create_indexes(missing)
        declared += [m.document["name"] for m in models]
    return declared


def _in_place(wanted: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    """Whether an index of this name exists with these keys and options (in doubt: not,
    and `createIndexes` decides)."""
    found = existing.get(wanted["name"])
    if found is None:
        return False

    def keys(pairs: Any) -> list[tuple[str, Any]]:
        return [(f, int(d) if isinstance(d, (int, float)) else d) for f, d in pairs]

    if keys(found.get("key", [])) != keys(wanted["key"].items()):
        return False
    options = {k: v for k, v in wanted.items() if k not in ("key", "name")}
    # An option at its default (`unique: False`) is not listed with the index.
    return all(found.get(k) == v or (not v and not found.get(k)) for k, v in options.items())
