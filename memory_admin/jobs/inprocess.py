"""The embedded default's job runner: a small pool of background threads in the web process.

Without a broker, a job used to run inside the request that started it, so one
caller's large formation held a web worker (and everyone's context calls queued
behind it). Now the request only queues the job here and answers. At most
MEMORY_INPROCESS_QUEUE jobs wait; beyond that a job stays `queued` in the store
and the periodic `retry_failed_jobs` sweep dispatches it later, so nothing is lost.

With MEMORY_INPROCESS_ISOLATION=process (the default) each pool thread hands its
jobs to a child process (`memory_admin.jobs.runner`) at OS niceness
MEMORY_INPROCESS_NICENESS: a formation's CPU work then neither holds the web
process's GIL nor takes a core the requests need. The thread sends the job with the
web process's current settings and waits for the child's answer (a wait that holds
no GIL); a child that dies or overruns JOB_TIMEOUT_SECONDS is killed and replaced,
and its job is taken over once its lease lapses. `thread` runs jobs in the pool
thread itself (lower priority too, but sharing the GIL).

`start` (the WSGI module, at start-up) starts the pool and its children before the first
job arrives: a child's start (Django, its store connection and indexes, at low priority
on a busy host) took seconds, and the first job after a start waited that long queued.

`shutdown` (tests, before dropping a database) waits for the backlog, then stops the
threads and their children; nothing of a job can write after it returns.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger("memory_admin.jobs.inprocess")
WORKER_NICENESS = 19
JOB_TIMEOUT_SECONDS = 900.0
STOP_WAIT_SECONDS = 10  # how long a child has to end its loop before it is killed
ROOT = Path(__file__).resolve().parents[2]
# The settings a child needs to act as this process (JSON values only, see job_runner).
SHIPPED_PREFIXES = ("MEMORY_", "MONGODB_", "OPENAI_")
_lock = threading.Lock()
_queue: queue.Queue[tuple[Any, str]] | None = None
_pending = 0  # jobs submitted and not finished
_threads: list[threading.Thread] = []  # threads of the current pool
_runners: set[_Runner] = set()  # children alive, whichever pool started them
_warm = threading.Condition(_lock)
_warming = 0  # pool threads still starting their child
WARM = "warm"  # the id the child answers a warm-up with


def enabled() -> bool:
    """Jobs go to the pool: no broker, and at least one worker thread configured."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER) and settings.MEMORY_INPROCESS_WORKERS > 0


def start() -> None:
    """Start the pool now, each thread with its child ready (store connected, indexes
    checked), so the first job does not wait for a child to start; a no-op without a pool."""
    if enabled():
        _get_queue()


def wait_warm(timeout: float = 30.0) -> bool:
    """Tests: wait until every thread of the pool has its child started and answering."""
    with _warm:
        return _warm.wait_for(lambda: _warming == 0, timeout=timeout)


def submit(task: Any, job_id: str) -> bool:
    """Queue the task for a worker thread; False when the queue is full (the sweep will)."""
    global _pending
    jobs = _get_queue()
    with _lock:
        _pending += 1
    try:
        jobs.put_nowait((task, job_id))
    except queue.Full:
        with _lock:
            _pending -= 1
        logger.warning("in-process queue full; job %s waits for the retry sweep", job_id)
        return False
    return True


def wait_idle(timeout: float = 30.0) -> bool:
    """Tests and benchmarks: wait until no job is waiting or running in the pool."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _lock:
            idle = _pending == 0
        if idle:
            return True
        time.sleep(0.02)
    return False


def reset() -> list[threading.Thread]:
    """Tests: the next job starts a fresh pool (with the settings of that moment); the old
    pool's threads stop after the jobs already queued (each then ends its child)."""
    global _queue
    with _lock:
        threads = list(_threads)
        if _queue is not None:
            for _ in threads:
                _queue.put((None, ""))  # each thread of the old pool stops (`_work`)
        _queue = None
        _threads.clear()
    return threads


def shutdown(timeout: float = 60.0) -> bool:
    """Wait for the backlog, stop the pool's threads and end their children.

    True when everything finished in time; otherwise the children are killed (their
    jobs stay `running` and are taken over when their leases lapse), so nothing of
    them writes after this returns either way.
    """
    idle = wait_idle(timeout)
    threads = reset()
    for thread in threads:
        thread.join(timeout=5)
    with _lock:
        runners = list(_runners)
    for runner in runners:
        runner.stop()
    # A thread still ending its own child (its `stop` took the process, so the one above
    # found none) is waited for: on a loaded machine a child may take seconds to exit.
    for thread in threads:
        thread.join(timeout=STOP_WAIT_SECONDS + 5)
    return idle


def _get_queue() -> queue.Queue[tuple[Any, str]]:
    """Start the threads on first use. They are daemons: a process that exits does not wait
    for the backlog (those jobs stay queued in the store, and a job cut off mid-run is
    taken over when its lease lapses)."""
    global _queue, _warming
    with _lock:
        if _queue is None:
            _queue = queue.Queue(maxsize=max(settings.MEMORY_INPROCESS_QUEUE, 1))
            isolated = settings.MEMORY_INPROCESS_ISOLATION == "process"
            workers = max(settings.MEMORY_INPROCESS_WORKERS, 1)
            _warming += workers if isolated else 0
            for n in range(workers):
                thread = threading.Thread(
                    target=_work, args=(_queue, isolated), name=f"memory-job-{n}", daemon=True
                )
                _threads.append(thread)
                thread.start()
        return _queue


def _work(jobs: queue.Queue[tuple[Any, str]], isolated: bool) -> None:
    global _pending, _warming
    # Linux priorities are per thread: requests get the CPU before background jobs.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)
    runner = _Runner() if isolated else None
    if runner is not None:
        try:
            runner.warm()
        finally:
            with _warm:
                _warming -= 1
                _warm.notify_all()
    try:
        while True:
            task, job_id = jobs.get()
            if task is None:  # `reset`
                return
            try:
                if runner is not None:
                    runner.run(task.name, job_id)
                else:
                    task.apply(args=[job_id])
            except Exception:
                logger.exception("in-process job %s failed", job_id)
            finally:
                with _lock:
                    _pending -= 1
                close_old_connections()
    finally:
        if runner is not None:
            runner.stop()


class _Runner:
    """One `memory_admin.jobs.runner` child per pool thread, started on first use and
    replaced if it dies or overruns (its job is then taken over when its lease lapses)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.buffer = b""

    def run(self, task_name: str, job_id: str) -> None:
        request = {"task": task_name, "job_id": job_id, "settings": shipped_settings()}
        if self._ask(request) != job_id:
            logger.warning("job runner died or overran during job %s; replacing it", job_id)
            self.stop(kill=True)

    def warm(self) -> None:
        """Start the child and let it open the store before any job needs it."""
        try:
            request = {"warm": True, "settings": shipped_settings()}
        except Exception:  # the store is not reachable yet: the child still starts
            logger.warning("job runner warm-up without the store settings", exc_info=True)
            request = {"warm": True, "settings": {}}
        if self._ask(request) != WARM:
            logger.warning("job runner did not answer its warm-up; replacing it")
            self.stop(kill=True)

    def _ask(self, request: dict[str, Any]) -> str | None:
        process = self._process()
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
            return self._answer(process, deadline=time.monotonic() + JOB_TIMEOUT_SECONDS)
        except OSError:
            return None

    def stop(self, *, kill: bool = False) -> None:
        """End the child: closing its stdin ends its loop after its job; kill it if it does
        not end (or at once: a child that overran must not write later)."""
        process, self.process = self.process, None
        if process is None:
            return
        with _lock:
            _runners.discard(self)
        if kill:
            process.kill()
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def _answer(self, process: subprocess.Popen[bytes], *, deadline: float) -> str | None:
        """The id in the child's next answer line; None if it exits or the deadline passes."""
        assert process.stdout is not None
        fd = process.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], min(remaining, 5.0))
            if not readable:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:  # the child exited
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            return str(json.loads(line)["done"])
        except (ValueError, KeyError, TypeError):
            return None

    def _process(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            if self.process is not None:
                self.stop()
            self.buffer = b""
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memory_admin.jobs.runner", str(_niceness())],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "DJANGO_SETTINGS_MODULE": _settings_module()},
            )
            with _lock:
                _runners.add(self)
        return self.process


def shipped_settings() -> dict[str, Any]:
    """This process's store, LLM and MEMORY_* settings, JSON values only, with the store URI
    resolved (so a child uses the embedded server this process supervises, never its own)."""
    from memory_admin.stores import mongodb_uri

    snapshot: dict[str, Any] = {}
    for name in dir(settings):
        if not name.startswith(SHIPPED_PREFIXES):
            continue
        value = getattr(settings, name)
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        snapshot[name] = value
    snapshot["MONGODB_URI"] = mongodb_uri()
    return snapshot


def _niceness() -> int:
    return int(settings.MEMORY_INPROCESS_NICENESS)


def _settings_module() -> str:
    return os.environ.get("DJANGO_SETTINGS_MODULE") or "memory_admin.settings"
