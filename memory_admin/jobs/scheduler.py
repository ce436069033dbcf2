"""The periodic sweeps in in-process mode: a daemon thread does what `celery beat` does.

Started by the WSGI module when no broker is configured, so `make run` forms
cold sessions and retries failed jobs without any other process.
"""

from __future__ import annotations

import logging
import threading
import time

from celery import Celery
from django.conf import settings

logger = logging.getLogger("memory_admin.jobs.scheduler")
_started = threading.Event()


def start_inprocess_scheduler() -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER or _started.is_set():
        return
    _started.set()
    from memory_admin.jobs import inprocess

    inprocess.start()  # the job pool and its children, ready before the first job
    thread = threading.Thread(target=_loop, name="memory-periodic", daemon=True)
    thread.start()


def _loop() -> None:
    from memory_admin.celery import app

    stop = threading.Event()
    entries = list(settings.CELERY_BEAT_SCHEDULE.values())
    interval = min(float(entry["schedule"]) for entry in entries)
    due = {entry["task"]: time.monotonic() + float(entry["schedule"]) for entry in entries}
    while not stop.wait(interval):
        for entry in entries:
            if time.monotonic() < due[entry["task"]] - interval / 2:
                continue  # each task keeps its own period
            due[entry["task"]] = time.monotonic() + float(entry["schedule"])
            run_periodic_task(app, entry["task"])


def run_periodic_task(app: Celery, name: str) -> None:
    """Run one sweep in this thread; a failure is logged and never ends the loop.

    Called, not `.apply()`d: a sweep every 5 s must not print Celery's "Task ...
    succeeded" line in the dev console.
    """
    try:
        app.tasks[name]()
    except Exception:
        logger.exception("periodic task %s failed", name)
