"""WSGI entry point (gunicorn memory_admin.wsgi)."""

from __future__ import annotations

import os
import sys

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")
application = get_wsgi_application()
sys.setswitchinterval(float(os.environ.get("MEMORY_WEB_SWITCH_SECONDS", "0.001")))

from memory_admin.scheduler import start_inprocess_scheduler  # noqa: E402

start_inprocess_scheduler()  # in-process mode only: a no-op when a broker is configured
