"""The embedded default's job runner: a small pool of background threads in the web process.

Without a broker, a job used to run inside the request that started it, so one
caller's large formation held a web worker (and everyone's context calls queued
behind it). Now the request only queues the job here and answers. At most
MEMORY_INPROCESS_QUEUE jobs wait; beyond that a job stays `queued` in the store
and the periodic `retry_failed_jobs` sweep dispatches it later, so nothing is lost.

The pool threads run at a lower OS priority than the request threads (they still
share the GIL with them).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from typing import Any

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger("memory_admin.inprocess")
WORKER_NICENESS = 19
_lock = threading.Lock()
_queue: queue.Queue[tuple[Any, str]] | None = None
_pending = 0  # jobs submitted and not finished
_threads = 0  # threads of the current pool


def enabled() -> bool:
    """Jobs go to the pool: no broker, and at least one worker thread configured."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER) and settings.MEMORY_INPROCESS_WORKERS > 0


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


def reset() -> None:
    """Tests: the next job starts a fresh pool (with the settings of that moment)."""
    global _queue
    with _lock:
        if _queue is not None:
            for _ in range(_threads):
                _queue.put((None, ""))  # each thread of the old pool stops (`_work`)
        _queue = None


def _get_queue() -> queue.Queue[tuple[Any, str]]:
    """Start the threads on first use. They are daemons: a process that exits does not wait
    for the backlog (those jobs stay queued in the store, and a job cut off mid-run is
    taken over when its lease lapses)."""
    global _queue, _threads
    with _lock:
        if _queue is None:
            _queue = queue.Queue(maxsize=max(settings.MEMORY_INPROCESS_QUEUE, 1))
            _threads = max(settings.MEMORY_INPROCESS_WORKERS, 1)
            for n in range(_threads):
                threading.Thread(
                    target=_work, args=(_queue,), name=f"memory-job-{n}", daemon=True
                ).start()
        return _queue


def _work(jobs: queue.Queue[tuple[Any, str]]) -> None:
    global _pending
    # Linux priorities are per thread: requests get the CPU before background jobs.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)
    while True:
        task, job_id = jobs.get()
        if task is None:  # `reset`
            return
        try:
            task.apply(args=[job_id])
        except Exception:
            logger.exception("in-process job %s failed", job_id)
        finally:
            with _lock:
                _pending -= 1
            close_old_connections()
