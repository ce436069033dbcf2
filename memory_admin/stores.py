"""Where the interfaces get their `MemoryStore`: settings in, one client per process."""

from __future__ import annotations

from django.conf import settings

from memory_admin.embedded_store import embedded_server_uri
from streams.store import MemoryStore
from streams.store.client import get_client

_embedded_uri: str | None = None


def mongodb_uri() -> str:
    """The configured URI, or the embedded server's (started on first need)."""
    global _embedded_uri
    if settings.MONGODB_URI:
        return settings.MONGODB_URI
    if _embedded_uri is None:
        _embedded_uri = embedded_server_uri(
            data_dir=settings.MEMORY_DATA_DIR,
            start_timeout=settings.MEMORY_EMBEDDED_START_TIMEOUT,
        )
    return _embedded_uri


def store_mode() -> str:
    return "mongodb" if settings.MONGODB_URI else "embedded"


def get_store() -> MemoryStore:
    """The store for the configured database; cheap to call on every request."""
    return MemoryStore(
        get_client(mongodb_uri()),
        settings.MONGODB_DB,
        scope_defaults={
            "consolidation_threshold": settings.MEMORY_CONSOLIDATION_THRESHOLD,
            "consolidation_max_words": settings.MEMORY_CONSOLIDATION_MAX_WORDS,
        },
        prices=settings.MEMORY_LLM_PRICES,
    )
