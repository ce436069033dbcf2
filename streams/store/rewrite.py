"""Copy every database of one server into another, documents and indexes: the embedded
store's compaction (`manage.py compact_store`).

SecantusDB has no `compact`: a deleted document's bytes stay in the WiredTiger files (in
freed blocks, old page images and the journal) until the space is reused, which under a
light write load may take indefinitely long. Forget-user promises that no copy stays, so
the data directory is rewritten: only live documents are copied into a new one, and the
old files are deleted.
"""

from __future__ import annotations

from typing import Any

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import MongoClient

SYSTEM_DATABASES = ("admin", "local", "config")
BATCH = 1_000
RAW = CodecOptions(document_class=RawBSONDocument)


def store_copy_uris(*, source_uri: str, target_uri: str) -> dict[str, int]:
    """`store_copy` between two servers given by URI (clients of its own, closed after)."""
    source: MongoClient[dict[str, Any]] = MongoClient(source_uri)
    target: MongoClient[dict[str, Any]] = MongoClient(target_uri)
    with source, target:
        return store_copy(source=source, target=target)


def store_copy(
    *, source: MongoClient[dict[str, Any]], target: MongoClient[dict[str, Any]]
) -> dict[str, int]:
    """Copy every user database's collections (raw documents, as stored) and indexes;
    returns documents copied per `database.collection`."""
    copied: dict[str, int] = {}
    for db_name in source.list_database_names():
        if db_name in SYSTEM_DATABASES:
            continue
        source_db, target_db = source[db_name], target[db_name]
        for name in source_db.list_collection_names():
            if name.startswith("system."):
                continue
            copied[f"{db_name}.{name}"] = _copy_collection(source_db, target_db, name)
    return copied


def _copy_collection(source_db: Any, target_db: Any, name: str) -> int:
    target_db.create_collection(name)
    for spec in source_db[name].list_indexes():
        if spec["name"] == "_id_":
            continue
        options = {k: v for k, v in spec.items() if k not in ("v", "key", "ns", "background")}
        target_db[name].create_index(list(spec["key"].items()), **options)
    count = 0
    batch: list[RawBSONDocument] = []
    for doc in source_db.get_collection(name, codec_options=RAW).find({}).sort("_id", 1):
        batch.append(doc)
        if len(batch) >= BATCH:
            target_db[name].insert_many(batch, ordered=False)
            count += len(batch)
            batch = []
    if batch:
        target_db[name].insert_many(batch, ordered=False)
        count += len(batch)
    return count
