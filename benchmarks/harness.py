"""What every benchmark needs: its own embedded store, a command counter, a table printer."""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymongo import monitoring

from memory_admin.runtime.embedded_store import EmbeddedServer, start_server, stop_server
from streams.jobs import JobRun


class CommandCounter(monitoring.CommandListener):
    """Counts store round trips (commands sent), per thread-agnostic window."""

    def __init__(self) -> None:
        self.count = 0
        self.by_name: dict[str, int] = {}
        self.micros: dict[str, int] = {}
        self._names: dict[int, str] = {}
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        with self._lock:
            self.count += 1
            self.by_name[event.command_name] = self.by_name.get(event.command_name, 0) + 1
            collection = event.command.get(event.command_name)
            self._names[event.request_id] = f"{event.command_name} {collection}"

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        with self._lock:
            name = self._names.pop(event.request_id, event.command_name)
            self.micros[name] = self.micros.get(name, 0) + event.duration_micros

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def reset(self) -> None:
        with self._lock:
            self.count = 0
            self.by_name = {}
            self.micros = {}


@contextmanager
def embedded_server() -> Iterator[EmbeddedServer]:
    """A fresh SecantusDB server in a temporary directory (or BENCH_DATA_DIR to keep it)."""
    keep = os.environ.get("BENCH_DATA_DIR")
    root = Path(keep or tempfile.mkdtemp(prefix="bench-"))
    server = start_server(
        storage_path=root / "data", log_path=root / "server.log", start_timeout=120, detached=False
    )
    try:
        yield server
    finally:
        stop_server(server)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)  # dropping a million documents is slower


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary_ms(samples: list[float]) -> tuple[float, float, float]:
    """p50, p95 and mean of samples given in seconds, in milliseconds."""
    ms = [s * 1000 for s in samples]
    return percentile(ms, 50), percentile(ms, 95), statistics.fmean(ms)


def print_row(row: Sequence[object]) -> None:
    """Each row as soon as it is measured (the table repeats them at the end)."""
    print("row: " + " | ".join(str(c) for c in row), flush=True)


def print_table(title: str, headers: list[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")


def bound_work(work: Callable[..., object], **kwargs: Any) -> Callable[[JobRun], None]:
    """A job's work (`work(run=..., **kwargs)`) bound now to this loop turn's store and
    settings: a typed stand-in for `lambda r, store=store: work(store=store, run=r)`."""

    def call(run: JobRun) -> None:
        work(run=run, **kwargs)

    return call


ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class WebProcess:
    port: int
    api_key: str
    pid: int = 0  # the gunicorn master (its worker is a child)


@contextmanager
def web_process(
    mongo_uri: str,
    db: str,
    *,
    workers: int = 1,
    threads: int = 1,
    extra_env: dict[str, str] | None = None,
) -> Iterator[WebProcess]:
    """`workers` gunicorn workers of `threads` threads each on embedded defaults over `db`,
    with an API key, until exit; `extra_env` adds or overrides settings."""
    env = {
        **os.environ,
        "MONGODB_URI": mongo_uri,
        "MONGODB_DB": db,
        "MEMORY_DATA_DIR": tempfile.mkdtemp(prefix="bench-web-"),
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "bench-only",
        "LOG_LEVEL": "WARNING",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
    }
    env.pop("OPENAI_API_KEY", None)
    env.pop("CELERY_BROKER_URL", None)
    env.update(extra_env or {})
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    created = subprocess.run(
        [*manage, "create_api_key", "--name", "bench"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    port = _free_port()
    bind = f"127.0.0.1:{port}"
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "memory_admin.wsgi",
            "-w",
            str(workers),
            "--threads",
            str(threads),
            "-b",
            bind,
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        _wait_for_port(port)
        yield WebProcess(port=port, api_key=created.stdout.strip().splitlines()[-1], pid=web.pid)
    finally:
        web.terminate()
        web.wait(timeout=30)
        shutil.rmtree(env["MEMORY_DATA_DIR"], ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("the web process did not start")
