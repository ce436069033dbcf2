"""The Celery app a broker-mode test worker runs: the product's app, plus the test plumbing.

Only two things are added (see tests/task_mode.py): the worker consumes the run's own
queue, and each task runs with the settings its message carries (the sending test's
database, fake LLM server and MEMORY_* settings), which tasks it sends carry on.
"""

from __future__ import annotations

import os

from celery import signals

from memory_admin.celery import app
from tests.task_mode import QUEUE_ENV, add_settings_header, apply_settings_header

app.conf.task_default_queue = os.environ[QUEUE_ENV]
signals.before_task_publish.connect(add_settings_header, weak=False)
signals.task_prerun.connect(apply_settings_header, weak=False)

__all__ = ["app"]
