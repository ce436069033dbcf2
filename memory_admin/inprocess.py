"""The embedded default's job runner: a small pool of background threads in the web process.

Without a broker, a job used to run inside the request that started it, so one
caller's large formation held a web worker (and everyone's context calls queued
behind it). Now the request only queues the job here and answers. At most
MEMORY_INPROCESS_QUEUE jobs wait; beyond that a job stays `queued` in the store
and the periodic `retry_failed_jobs` sweep dispatches it later, so nothing is lost.

The worker threads run at a lower OS priority (Linux priorities are per thread),
so on a busy machine the request threads get the CPU first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger("memory_admin.inprocess")
WORKER_NICENESS = 10
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_slots: threading.BoundedSemaphore | None = None


def enabled() -> bool:
    """Jobs go to the pool: no broker, and at least one worker thread configured."""
    return bool(settings.CELERY_TASK_ALWAYS_EAGER) and settings.MEMORY_INPROCESS_WORKERS > 0


def submit(task: Any, job_id: str) -> bool:
    """Queue the task for a worker thread; False when the queue is full (the sweep will)."""
    pool, slots = _get_pool()
    if not slots.acquire(blocking=False):
        logger.warning("in-process queue full; job %s waits for the retry sweep", job_id)
        return False
    try:
        pool.submit(_run, task, job_id, slots)
    except RuntimeError:  # shutting down
        slots.release()
        return False
    return True


def _run(task: Any, job_id: str, slots: threading.BoundedSemaphore) -> None:
    try:
        task.apply(args=[job_id])
    except Exception:
        logger.exception("in-process job %s failed", job_id)
    finally:
        slots.release()
        close_old_connections()


def _lower_priority() -> None:
    # Not Linux, or not allowed: the thread runs at normal priority.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)


def _get_pool() -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
    global _pool, _slots
    with _lock:
        if _pool is None or _slots is None:
            workers = max(settings.MEMORY_INPROCESS_WORKERS, 1)
            _pool = ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="memory-job", initializer=_lower_priority
            )
            _slots = threading.BoundedSemaphore(workers + settings.MEMORY_INPROCESS_QUEUE)
        return _pool, _slots


def wait_idle(timeout: float = 30.0) -> bool:
    """Tests and benchmarks: wait until no job is queued or running in the pool."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _lock:
            pool = _pool
        if pool is None or pool._work_queue.qsize() == 0 and not _busy(pool):
            return True
        time.sleep(0.02)
    return False


def _busy(pool: ThreadPoolExecutor) -> bool:
    slots = _slots
    if slots is None:
        return False
    return slots._value < max(settings.MEMORY_INPROCESS_WORKERS, 1) + (
        settings.MEMORY_INPROCESS_QUEUE
    )
