"""memory-admin: the Django project (settings, API, UI, tasks) around the `streams` domain."""

from __future__ import annotations

from memory_admin.celery import app as celery_app

__all__ = ["celery_app"]
