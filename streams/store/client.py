"""One MongoClient per process, created lazily after fork (pymongo clients are not fork-safe)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from pymongo import MongoClient
from pymongo.monitoring import CommandListener

_clients: dict[tuple[int, str], MongoClient] = {}
_lock = threading.Lock()


def get_client(uri: str, *, event_listeners: Sequence[CommandListener] = ()) -> MongoClient:
    """The process's client for `uri`; a forked child gets its own on first use."""
    key = (os.getpid(), uri)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = MongoClient(
                    uri,
                    tz_aware=True,
                    appname="memory-admin",
                    serverSelectionTimeoutMS=5000,
                    connectTimeoutMS=5000,
                    event_listeners=list(event_listeners),
                )
                _clients[key] = client
    return client


def close_clients() -> None:
    """Close this process's clients (tests and shutdown)."""
    with _lock:
        for (pid, uri), client in list(_clients.items()):
            if pid == os.getpid():
                client.close()
            del _clients[(pid, uri)]
