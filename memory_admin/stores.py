"""Where the interfaces get their `MemoryStore`: settings in, one client per process.

The API and UI take the type from here too: they import no `streams.store` module
(an import-linter contract), so a handler holds the store only to pass it on.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from django.conf import settings

from memory_admin.runtime import supervisor as store_supervisor
from streams.core.consolidate_after import ConsolidateAfterDays
from streams.core.exceptions import IndexesMissing, Unavailable
from streams.core.instruction_policy import InstructionPolicy
from streams.store import MemoryStore
from streams.store.client import get_client, is_unreachable

__all__ = [
    "MemoryStore",
    "erasure_key",
    "get_store",
    "indexes_ensured",
    "store_mode",
    "store_unreachable",
]

logger = logging.getLogger("memory_admin.store")

# (process, URI, database) whose declared indexes this process has made sure of.
_indexed: set[tuple[int, str, str]] = set()
_index_lock = threading.Lock()


def mongodb_uri() -> str:
    """The configured URI, or the embedded server's (started on first need, then supervised)."""
    if settings.MONGODB_URI:
        return settings.MONGODB_URI
    return store_supervisor.supervised_uri(
        data_dir=settings.MEMORY_DATA_DIR,
        start_timeout=settings.MEMORY_EMBEDDED_START_TIMEOUT,
    )


def erasure_key() -> bytes:
    """The erasure tombstones' HMAC key (MEMORY_ERASURE_KEY, else the SECRET_KEY)."""
    return _erasure_key(settings.MEMORY_ERASURE_KEY, settings.SECRET_KEY)


def _erasure_key(erasure: str, secret: str) -> bytes:
    return (erasure or secret).encode()


def store_mode() -> str:
    return "mongodb" if settings.MONGODB_URI else "embedded"


def get_store() -> MemoryStore:
    """The store for the configured database; cheap to call on every request.

    One `MemoryStore` per client and settings is kept: building one (its thirty-odd
    repositories and their collections) was 5 to 7% of a context call's web CPU. A
    changed setting (tests override them) or a new client (the embedded server replaced)
    builds a new one. The first call of a process (and after the embedded server is
    replaced) creates any missing declared index, so idempotent ingest never depends on
    someone having run `ensure_indexes`.
    """
    uri = mongodb_uri()
    client = get_client(
        uri, server_selection_timeout_ms=settings.MONGODB_SERVER_SELECTION_TIMEOUT_MS
    )
    options = _store_options()
    key = (id(client), *map(_hashable, options.values()))
    store = _stores.get(key)
    if store is None:
        store = _built_store(client, options)
        with _stores_lock:
            if len(_stores) >= MAX_KEPT_STORES:
                _stores.clear()
            _stores[key] = store
    _ensure_indexes_once(store, (os.getpid(), uri, options["MONGODB_DB"]))
    return store


# The stores `get_store` built, by client and the settings they were built from.
_stores: dict[tuple[Any, ...], MemoryStore] = {}
_stores_lock = threading.Lock()
MAX_KEPT_STORES = 16

# Every setting a `MemoryStore` is built from: `_built_store` reads these and no other,
# so the key of a kept store cannot miss one.
STORE_SETTINGS = (
    "MONGODB_DB",
    "MEMORY_CONSOLIDATION_THRESHOLD",
    "MEMORY_CONSOLIDATION_MAX_WORDS",
    "MEMORY_LLM_PRICES",
    "MEMORY_ERASURE_KEY",
    "SECRET_KEY",
    "MEMORY_ACCESS_FLUSH_SECONDS",
    "MEMORY_CONTEXT_LOG_DAYS",
    "MEMORY_STORE_CONFLICT_SECONDS",
    "MEMORY_STORE_TRANSACTIONS_PER_PROCESS",
    "MEMORY_REVIEW_MODE_SHARED",
    "MEMORY_COLLECTIVE_MIN_GROUPS",
    "MEMORY_INSTRUCTION_POLICY",
    "MEMORY_CONSOLIDATE_AFTER_DAYS",
    "MEMORY_REVIEW_UNDO_SECONDS",
    "MEMORY_STORE_FLAVOUR",
    "MEMORY_LLM_MODEL_FAST",
    "MEMORY_LLM_MODEL_SLOW",
    "MEMORY_BULK_UNDO_SECONDS",
)


def _store_options() -> dict[str, Any]:
    return {name: getattr(settings, name) for name in STORE_SETTINGS}


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _built_store(client: Any, o: dict[str, Any]) -> MemoryStore:
    store = MemoryStore(
        client,
        o["MONGODB_DB"],
        scope_defaults={
            "consolidation_threshold": o["MEMORY_CONSOLIDATION_THRESHOLD"],
            "consolidation_max_words": o["MEMORY_CONSOLIDATION_MAX_WORDS"],
        },
        prices=o["MEMORY_LLM_PRICES"],
        erasure_key=_erasure_key(o["MEMORY_ERASURE_KEY"], o["SECRET_KEY"]),
        access_flush_seconds=o["MEMORY_ACCESS_FLUSH_SECONDS"],
        context_log_days=o["MEMORY_CONTEXT_LOG_DAYS"],
        conflict_seconds=o["MEMORY_STORE_CONFLICT_SECONDS"],
        transactions_per_process=o["MEMORY_STORE_TRANSACTIONS_PER_PROCESS"],
        review_mode_shared=o["MEMORY_REVIEW_MODE_SHARED"],
        collective_min_groups=o["MEMORY_COLLECTIVE_MIN_GROUPS"],
        instruction_policy=InstructionPolicy.parse(o["MEMORY_INSTRUCTION_POLICY"]),
        consolidate_after=ConsolidateAfterDays.parse(o["MEMORY_CONSOLIDATE_AFTER_DAYS"]),
        review_undo_seconds=o["MEMORY_REVIEW_UNDO_SECONDS"],
        flavour=o["MEMORY_STORE_FLAVOUR"],
        default_models={
            "extraction": o["MEMORY_LLM_MODEL_FAST"],
            "consolidation": o["MEMORY_LLM_MODEL_SLOW"],
            "propagation": o["MEMORY_LLM_MODEL_FAST"],
        },
    )
    store.bulk_undo_seconds = o["MEMORY_BULK_UNDO_SECONDS"]
    return store


def _ensure_indexes_once(store: MemoryStore, key: tuple[int, str, str]) -> None:
    if key in _indexed:
        return
    with _index_lock:
        if key in _indexed:
            return
        try:
            store.ensure_indexes()
        except Exception as exc:
            if is_unreachable(exc):
                raise Unavailable("the memory store is unreachable") from exc
            logger.exception("the store's indexes could not be created: refusing to use it")
            raise IndexesMissing(
                "the memory store's indexes are missing and could not be created; "
                "see the log and run `manage.py ensure_indexes`"
            ) from exc
        _indexed.add(key)


def indexes_ensured(uri: str, db_name: str) -> None:
    """Record that `db_name`'s indexes exist (tests create them with each database)."""
    _indexed.add((os.getpid(), uri, db_name))


def store_unreachable(exc: BaseException) -> bool:
    """Whether `exc` means the store is down; if so, an embedded one is checked and restarted."""
    if not is_unreachable(exc):
        return False
    if not settings.MONGODB_URI:
        store_supervisor.store_failed(
            data_dir=settings.MEMORY_DATA_DIR,
            start_timeout=settings.MEMORY_EMBEDDED_START_TIMEOUT,
        )
    return True
