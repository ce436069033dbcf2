"""gunicorn hooks that time one add's stages inside the worker (`benchmarks single_add`).

`benchmarks/profile_gunicorn.conf.py` is the production `gunicorn.conf.py` plus these
hooks; the worker writes one JSON line per request to $BENCH_PROFILE_FILE: each stage's
wall time (ms) and each store command with its round trip and the server's own time
(pymongo's command monitoring: `duration_micros` is the client-side round trip; the
round trip as the client sees it, store server time plus one loopback hop).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import threading
import time
from typing import Any

from pymongo import monitoring

_local = threading.local()
_out_lock = threading.Lock()


def _now() -> float:
    return time.perf_counter()


def _record(name: str, start: float, end: float) -> None:
    stages = getattr(_local, "stages", None)
    if stages is not None:
        stages.append((name, start, end))


def timed(owner: Any, attr: str, name: str) -> None:
    """Replace `owner.attr` by a wrapper recording its wall time as stage `name`."""
    original = getattr(owner, attr)
    if getattr(original, "_bench_timed", False):
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = _now()
        try:
            return original(*args, **kwargs)
        finally:
            _record(name, start, _now())

    wrapper._bench_timed = True  # type: ignore[attr-defined]
    setattr(owner, attr, wrapper)


class Commands(monitoring.CommandListener):
    """pymongo command listener: each command's name, collection and round trip."""

    def started(self, event: Any) -> None:
        starts = getattr(_local, "command_starts", None)
        if starts is not None:
            collection = event.command.get(event.command_name)
            label = f"{event.command_name} {collection if isinstance(collection, str) else ''}"
            starts[event.request_id] = (label.strip(), _now())

    def succeeded(self, event: Any) -> None:
        self._done(event)

    def failed(self, event: Any) -> None:
        self._done(event)

    def _done(self, event: Any) -> None:
        starts = getattr(_local, "command_starts", None)
        if starts is None or event.request_id not in starts:
            return
        label, start = starts.pop(event.request_id)
        _local.commands.append((label, start, event.duration_micros / 1000))


# (module, attribute, stage): what a profiled worker times. An attribute of a class is
# "Class.method". tests/test_bench_profile_hooks.py checks every one still exists, so a
# rename in the tree fails a test instead of the profiled worker's boot.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("memory_admin.api.auth", "ApiKeyAuth.authenticate", "auth (API key, SQLite)"),
    ("memory_admin.api.v1.observations", "get_store", "get_store"),
    ("memory_admin.stores", "get_store", "get_store"),
    ("memory_admin.api.v1.observations", "scope_get", "scope read"),
    ("memory_admin.api.v1.observations", "do_observation_add", "action do_observation_add"),
    ("streams.actions.observations", "observation_add", "observation_add"),
    ("streams.actions.observations", "schedule", "job dispatch (schedule)"),
    ("streams.store", "MemoryStore.in_transaction", "transaction (whole)"),
    ("streams.memory.observations", "observations_append", "append (claim+insert+postings)"),
    ("streams.memory.add_writes", "record_added", "audit entry"),
    ("streams.memory.add_writes", "counters_add", "counters (agent + day)"),
    ("streams.memory.add_writes", "threshold_job", "threshold check"),
    ("streams.store.write_batch", "WriteBatch.flush", "write batch (one bulkWrite)"),
    ("memory_admin.jobs.inprocess", "submit", "in-process pool hand-off"),
    ("ninja.operation", "Operation.run", "ninja operation (auth+parse+view+render)"),
)


def stage_target(module: str, attribute: str) -> tuple[Any, str]:
    """The object that owns `attribute` of `module` and the attribute's own name."""
    owner: Any = importlib.import_module(module)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    getattr(owner, name)  # AttributeError here: the stage names what is gone
    return owner, name


def install() -> None:
    monitoring.register(Commands())
    for module, attribute, stage in STAGES:
        timed(*stage_target(module, attribute), stage)


def post_worker_init(worker: Any) -> None:
    install()
    app = worker.wsgi

    def profiled(environ: dict[str, Any], start_response: Any) -> Any:
        _local.stages = []
        _local.commands = []
        _local.command_starts = {}
        start = _now()
        try:
            body = list(app(environ, start_response))
        finally:
            end = _now()
            if environ.get("REQUEST_METHOD") == "POST":
                _write(start, end, _local.stages, _local.commands)
            _local.stages = None
            _local.command_starts = None
        return body

    worker.wsgi = profiled


def _write(start: float, end: float, stages: list, commands: list) -> None:
    path = os.environ.get("BENCH_PROFILE_FILE")
    if not path:
        return
    line = {
        "wsgi_ms": (end - start) * 1000,
        "stages": [[n, (s - start) * 1000, (e - s) * 1000] for n, s, e in stages],
        "commands": [[n, (s - start) * 1000, ms] for n, s, ms in commands],
    }
    with _out_lock, open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
