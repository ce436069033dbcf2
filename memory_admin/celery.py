"""The Celery app: a real broker when CELERY_BROKER_URL is set, in-process tasks otherwise."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")

app = Celery("memory_admin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["memory_admin"])
