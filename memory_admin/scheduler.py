"""The periodic sweeps in in-process mode: a daemon thread does what `celery beat` does.

Started by the WSGI module when no broker is configured, so `make run` forms
cold sessions and retries failed jobs without any other process.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

logger = logging.getLogger("memory_admin.scheduler")
_started = threading.Event()


def start_inprocess_scheduler() -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER or _started.is_set():
        return
    _started.set()
    from memory_admin import inprocess

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
            try:
                app.tasks[entry["task"]].apply()
            except Exception:  # a failed sweep must not end the loop
                logger.exception("periodic task %s failed", entry["task"])
