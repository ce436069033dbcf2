"""Index declarations: each repository declares the indexes its queries need, beside them.

`ensure_indexes` applies the union idempotently, and the test-time query guard
reads the same declarations to check that every query the suite sends is served.
"""

from __future__ import annotations

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


def apply_indexes(db: Database, specs: list[IndexSpec]) -> list[str]:
    """Create every declared index (a no-op for those that exist); the names, for the log."""
    created: list[str] = []
    by_collection: dict[str, list[IndexSpec]] = {}
    for spec in specs:
        by_collection.setdefault(spec.collection, []).append(spec)
    for collection, group in sorted(by_collection.items()):
        created += db[collection].create_indexes([spec.model() for spec in group])
    return created
