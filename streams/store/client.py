"""One MongoClient per process, created lazily after fork (pymongo clients are not fork-safe)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from pymongo import MongoClient
from pymongo.errors import ConnectionFailure
from pymongo.monitoring import CommandListener

# How long an operation waits for a reachable server before it fails. Short, so a request
# made while the store is down answers 503 within about a second instead of hanging.
SERVER_SELECTION_TIMEOUT_MS = 1000

_clients: dict[tuple[int, str], MongoClient] = {}
_lock = threading.Lock()


def get_client(
    uri: str,
    *,
    event_listeners: Sequence[CommandListener] = (),
    server_selection_timeout_ms: int = SERVER_SELECTION_TIMEOUT_MS,
) -> MongoClient:
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
                    serverSelectionTimeoutMS=server_selection_timeout_ms,
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


def close_client(uri: str) -> None:
    """Close this process's client for `uri` (a replaced embedded server's)."""
    with _lock:
        client = _clients.pop((os.getpid(), uri), None)
    if client is not None:
        client.close()


def is_unreachable(exc: BaseException | None) -> bool:
    """Whether `exc` (or what it was raised from) means the store could not be reached."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ConnectionFailure):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def provision_root_user(uri: str, *, username: str, password: str) -> None:
    """Create the server's administrative user, or reset its password if it exists (on a
    server running without access control: how mongod and SecantusDB provision users)."""
    from pymongo.errors import OperationFailure

    client: MongoClient[dict[str, Any]] = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    with client:
        try:
            client.admin.command("createUser", username, pwd=password, roles=["root"])
        except OperationFailure:  # it exists
            client.admin.command("updateUser", username, pwd=password, roles=["root"])
