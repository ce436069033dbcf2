"""gunicorn hooks that time one add's stages inside the worker (`benchmarks single_add`).

`benchmarks/profile_gunicorn.conf.py` is the production `gunicorn.conf.py` plus these
hooks; the worker writes one JSON line per request to $BENCH_PROFILE_FILE: each stage's
wall time (ms) and each store command with its round trip and the server's own time
(pymongo's command monitoring: `duration_micros` is the client-side round trip; the
round trip as the client sees it, store server time plus one loopback hop).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
import types
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


def install() -> None:
    monitoring.register(Commands())

    import memory_admin.api.auth as auth
    import memory_admin.api.v1.observations as api_observations
    import memory_admin.stores as stores
    import streams.actions.observations as actions
    import streams.memory.observations as observations
    from streams.store import MemoryStore

    timed(auth.ApiKeyAuth, "authenticate", "auth (API key, SQLite)")
    timed(api_observations, "get_store", "get_store")
    timed(stores, "get_store", "get_store")
    timed(api_observations, "scope_get", "scope read")
    timed(api_observations, "do_observation_add", "action do_observation_add")
    timed(actions, "observation_add", "observation_add")
    timed(actions, "schedule", "job dispatch (schedule)")
    timed(MemoryStore, "in_transaction", "transaction (whole)")
    timed(observations, "observations_append", "append (claim+insert+postings)")
    tail: types.ModuleType
    try:  # an add's tail (audit entry, counters, threshold) moved to `add_writes`
        import streams.memory.add_writes as tail
    except ImportError:  # a tree from before: they were in `observations`
        tail = observations
    timed(tail, "audit_record", "audit entry")
    timed(tail, "counters_add", "counters (agent + day)")
    timed(tail, "threshold_job", "threshold check")
    try:
        from streams.store.write_batch import WriteBatch

        timed(WriteBatch, "flush", "write batch (one bulkWrite)")
    except ImportError:  # a tree from before the batch
        pass
    try:
        import memory_admin.jobs.inprocess as inprocess

        timed(inprocess, "submit", "in-process pool hand-off")
    except ImportError:
        pass
    from ninja.operation import Operation

    timed(Operation, "run", "ninja operation (auth+parse+view+render)")


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
