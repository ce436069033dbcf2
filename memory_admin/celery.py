"""The Celery app: a real broker when CELERY_BROKER_URL is set, in-process tasks otherwise."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")


def _started_by_celery_cli() -> bool:
    """Whether this process is the `celery` command (`celery -A memory_admin worker`)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return argv0.name == "celery" or argv0.parts[-2:] == ("celery", "__main__.py")


# A production entry point, like gunicorn.conf.py: DEBUG is off unless DJANGO_DEBUG says
# otherwise (so DJANGO_SECRET_KEY is required). Settings are read lazily, after this.
if _started_by_celery_cli() and not os.environ.get("DJANGO_DEBUG", "").strip():
    os.environ["DJANGO_DEBUG"] = "false"

app = Celery("memory_admin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["memory_admin.jobs"])
