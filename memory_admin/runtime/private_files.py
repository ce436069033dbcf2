"""The data directory and the secret files in it: private to the app's own user.

MEMORY_DATA_DIR holds the store's files, `db.sqlite3` (with the admin sessions), the
development secret key, the demo password and the store's credentials. The directory is
0700 and every file is created 0600 from its first byte (`os.open` with the mode and
`O_EXCL`), never widened by the umask nor chmod-ed after writing, so no other local user
can read it even for an instant. No Django import: settings use this module.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """`path` as a directory only its owner can enter: created 0700 (parents too) if missing.

    An existing directory of ours that others may enter (an install from before this
    rule) is closed to them.
    """
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(stat.S_IMODE(info.st_mode) & ~0o077)
    return path


def create_private_file(path: Path, content: str | bytes = b"") -> bool:
    """Create `path` 0600 with `content` if it does not exist; False if it already did."""
    data = content.encode() if isinstance(content, str) else content
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return False
    try:
        # The umask can only narrow the mode; an odd umask is no reason to widen it.
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    os.close(fd)
    return True


def open_private_append(path: Path):
    """`path` opened for appending (binary), created 0600 if missing: for logs."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, FILE_MODE)
    return os.fdopen(fd, "ab")


def read_or_create_secret(path: Path, make: Callable[[], str]) -> str:
    """The secret kept in `path`, created (0600) from `make()` the first time."""
    if not path.is_file() and create_private_file(path, make()):
        return path.read_text().strip()
    for _ in range(100):  # another process may have created it and not yet written it
        secret = path.read_text().strip()
        if secret:
            return secret
        time.sleep(0.02)
    raise OSError(f"{path} is empty")


def close_to_others(path: Path) -> None:
    """An existing file of ours that others may read (from an older install): 0600."""
    with contextlib.suppress(FileNotFoundError):
        info = path.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            path.chmod(FILE_MODE)


def private_sqlite_file(database: Mapping[str, object]) -> None:
    """A SQLite database file created 0600 (empty is a valid database) before SQLite opens
    it; SQLite gives its journal and WAL files the database file's mode."""
    name = str(database.get("NAME") or "")
    if not str(database.get("ENGINE", "")).endswith("sqlite3") or not name or name == ":memory:":
        return
    if name.startswith("file:"):
        return  # a URI (Django's in-memory test databases)
    path = Path(name)
    create_private_file(path)
    close_to_others(path)
