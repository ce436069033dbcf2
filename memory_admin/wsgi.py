"""WSGI entry point (gunicorn memory_admin.wsgi)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")
application = get_wsgi_application()

from memory_admin.jobs.scheduler import start_inprocess_scheduler  # noqa: E402

start_inprocess_scheduler()  # in-process mode only: a no-op when a broker is configured

from memory_admin.integrations.embeddings import warm_up  # noqa: E402

warm_up()  # the local model loads in the background, not in the first search

from memory_admin.runtime.heap import freeze_startup_heap  # noqa: E402

freeze_startup_heap()  # last: the loaded app is never walked by a full collection again
