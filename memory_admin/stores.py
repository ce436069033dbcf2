"""Where the interfaces get their `MemoryStore`: settings in, one client per process."""

from __future__ import annotations

from django.conf import settings

from memory_admin import store_supervisor
from streams.store import MemoryStore
from streams.store.client import get_client, is_unreachable


def mongodb_uri() -> str:
    """The configured URI, or the embedded server's (started on first need, then supervised)."""
    if settings.MONGODB_URI:
        return settings.MONGODB_URI
    return store_supervisor.supervised_uri(
        data_dir=settings.MEMORY_DATA_DIR,
        start_timeout=settings.MEMORY_EMBEDDED_START_TIMEOUT,
    )


def store_mode() -> str:
    return "mongodb" if settings.MONGODB_URI else "embedded"


def get_store() -> MemoryStore:
    """The store for the configured database; cheap to call on every request."""
    return MemoryStore(
        get_client(
            mongodb_uri(),
            server_selection_timeout_ms=settings.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
        ),
        settings.MONGODB_DB,
        scope_defaults={
            "consolidation_threshold": settings.MEMORY_CONSOLIDATION_THRESHOLD,
            "consolidation_max_words": settings.MEMORY_CONSOLIDATION_MAX_WORDS,
        },
    )


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
