"""What every benchmark needs: its own embedded store, a command counter, a table printer."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pymongo import monitoring

from memory_admin.embedded_store import EmbeddedServer, start_server, stop_server


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


def print_row(row: list[object]) -> None:
    """Each row as soon as it is measured (the table repeats them at the end)."""
    print("row: " + " | ".join(str(c) for c in row), flush=True)


def print_table(title: str, headers: list[str], rows: list[list[object]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")
