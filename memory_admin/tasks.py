"""Celery tasks: thin wrappers that take ids, re-fetch, and call one service."""

from __future__ import annotations

from celery import shared_task

from memory_admin.stores import get_store


@shared_task(name="memory_admin.tasks.check_store")
def check_store() -> dict[str, str]:
    """Prove a worker reaches the store (used by health checks and the worker smoke test)."""
    get_store().ping()
    return {"store": "ok"}
