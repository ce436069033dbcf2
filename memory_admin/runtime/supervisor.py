"""Keeps the embedded store running for every process of the app.

The embedded server is one process shared by all of the app's processes
(embedded_store.py). If it dies (`kill -9`, a crash), nothing would start another
until every app process restarted. So:

- Each process remembers the URI of the server recorded in the state file together
  with the file's signature; when another process records a new server, the
  signature changes and the next request switches to it (closing the old client).
- A failed store call (`store_failed`) and a light watchdog thread (one per process,
  every second) ask for a recovery: in a background thread, under the data
  directory's file lock, a dead server is replaced; the lock makes one process do
  it while the others wait and then find the new one alive.
- Meanwhile requests fail fast (a short server selection timeout) and answer 503.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from memory_admin.runtime.embedded_store import (
    STATE_FILE,
    embedded_server_uri,
    recorded_server,
    restart_if_dead,
    server_alive,
)
from streams.store.client import close_client

logger = logging.getLogger("memory_admin.store")

WATCH_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class _Known:
    pid: int  # the app process this belongs to (a forked child starts afresh)
    uri: str
    signature: tuple[int, int, int]


_lock = threading.Lock()
_known: _Known | None = None
_recovering: threading.Thread | None = None
_watching: tuple[int, threading.Thread] | None = None


def supervised_uri(*, data_dir: Path, start_timeout: float) -> str:
    """The URI of the data directory's current server (started if none was ever recorded)."""
    global _known
    signature = _signature(data_dir / STATE_FILE)
    known = _known
    if known is not None and known.pid == os.getpid() and known.signature == signature:
        return known.uri
    with _lock:
        uri = embedded_server_uri(data_dir=data_dir, start_timeout=start_timeout)
        fresh = _signature(data_dir / STATE_FILE)
        previous = _known
        if fresh is not None:
            _known = _Known(pid=os.getpid(), uri=uri, signature=fresh)
    if previous is not None and previous.pid == os.getpid() and previous.uri != uri:
        logger.warning("the embedded store moved to %s: reconnecting", _without_password(uri))
        close_client(previous.uri)
    _watch(data_dir, start_timeout)
    return uri


def store_failed(*, data_dir: Path, start_timeout: float) -> None:
    """A store call could not reach the server: check it, and replace it if it is dead.

    Returns at once; the check runs in a background thread, one at a time per process.
    """
    global _recovering
    with _lock:
        if _recovering is not None and _recovering.is_alive():
            return
        _recovering = threading.Thread(
            target=_recover,
            args=(data_dir, start_timeout),
            name="embedded-store-recovery",
            daemon=True,
        )
        _recovering.start()


def wait_for_recovery(timeout: float) -> None:
    """Tests: wait until a running recovery is over."""
    thread = _recovering
    if thread is not None:
        thread.join(timeout)


def _recover(data_dir: Path, start_timeout: float) -> None:
    try:
        # Under the file lock: starts a server only if the recorded one is dead.
        uri = restart_if_dead(data_dir=data_dir, start_timeout=start_timeout)
    except Exception:
        logger.exception("the embedded store could not be restarted")
        return
    logger.info("embedded store checked: %s", _without_password(uri) if uri else uri)


def _watch(data_dir: Path, start_timeout: float) -> None:
    """Start this process's watchdog once: it notices a dead server without a request."""
    global _watching
    if _watching is not None and _watching[0] == os.getpid():
        return
    with _lock:
        if _watching is not None and _watching[0] == os.getpid():
            return
        thread = threading.Thread(
            target=_watch_loop,
            args=(data_dir, start_timeout),
            name="embedded-store-watchdog",
            daemon=True,
        )
        _watching = (os.getpid(), thread)
        thread.start()


def _watch_loop(data_dir: Path, start_timeout: float) -> None:
    while True:
        time.sleep(WATCH_INTERVAL_SECONDS)
        try:
            server = recorded_server(data_dir)
            if server is not None and not server_alive(server):
                logger.warning("the embedded store is not running: restarting it")
                store_failed(data_dir=data_dir, start_timeout=start_timeout)
        except Exception:  # the watchdog must outlive any one failed check
            logger.exception("embedded store watchdog check failed")


def _without_password(uri: str) -> str:
    """The URI for the log: the store's password is kept in its 0600 file only."""
    return re.sub(r"//([^:/@]+):[^@/]*@", r"//\1:***@", uri)


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)
