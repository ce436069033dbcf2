"""Compact the embedded store: rewrite its data directory with only the live documents.

SecantusDB has no `compact` command, and WiredTiger keeps a deleted document's bytes in
its files (freed blocks, the journal) until the space is reused: measured, a forgotten
user's strings were still in 7 data files 34 minutes after forget. `compact_data_dir`
stops the data directory's server, copies every database into a fresh directory
(`streams.store.rewrite.store_copy`), gives it the same store user, swaps it in and
deletes the old files. The next request starts the server again (as after
`stop_embedded_store`). Run it after forgetting someone (`manage.py compact_store`);
with `MONGODB_URI` set (a real MongoDB), use the server's own `compact` instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from memory_admin.runtime.embedded_store import (
    LOCK_FILE,
    LOG_FILE,
    _locked,
    start_server,
    stop_embedded_server,
    stop_server,
    store_credentials,
)
from streams.store.client import provision_root_user
from streams.store.rewrite import store_copy_uris

STORE_DIR = "mongo"


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def compact_data_dir(*, data_dir: Path, start_timeout: float = 60.0) -> dict[str, Any]:
    """Rewrite `data_dir`'s store with only its live documents; what was copied, and the
    directory's size before and after."""
    current = data_dir / STORE_DIR
    fresh = data_dir / f"{STORE_DIR}.compacting"
    old = data_dir / f"{STORE_DIR}.old"
    stop_embedded_server(data_dir=data_dir)
    with _locked(data_dir / LOCK_FILE):  # no server starts on the directory meanwhile
        before = directory_bytes(current)
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
        log = data_dir / LOG_FILE
        source = start_server(
            storage_path=current, log_path=log, start_timeout=start_timeout, detached=False
        )
        try:
            target = start_server(
                storage_path=fresh, log_path=log, start_timeout=start_timeout, detached=False
            )
            try:
                copied = store_copy_uris(source_uri=source.uri, target_uri=target.uri)
                credentials = store_credentials(data_dir)
                provision_root_user(
                    target.uri,
                    username=credentials["username"],
                    password=credentials["password"],
                )
            finally:
                stop_server(target)
        finally:
            stop_server(source)
        current.rename(old)
        fresh.rename(current)
        shutil.rmtree(old)
        after = directory_bytes(current)
    return {"copied": copied, "bytes_before": before, "bytes_after": after}
