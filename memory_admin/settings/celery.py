"""Celery: a broker URL means real workers; unset means tasks run in-process."""

from __future__ import annotations

from typing import TypedDict

from memory_admin.settings.env import env_int, env_optional


class BeatEntry(TypedDict):
    """One periodic task: its dotted name and its period in seconds."""

    task: str
    schedule: float


CELERY_BROKER_URL: str | None = env_optional("CELERY_BROKER_URL")
# A Redis broker through kombu's transport with one fix: a lost connection never ends the
# worker (memory_admin/jobs/broker.py; the multi-host rehearsal's stuck jobs).
CELERY_BROKER_TRANSPORT: str | None = (
    "memory_admin.jobs.broker:Transport"
    if (CELERY_BROKER_URL or "").startswith(("redis://", "rediss://"))
    else None
)
CELERY_RESULT_BACKEND: str | None = env_optional("CELERY_RESULT_BACKEND")
# In-process mode: tasks run eagerly, right after the request's transaction commits.
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
# The queue tasks are sent to and workers consume (one broker shared by several deployments).
CELERY_TASK_DEFAULT_QUEUE = env_optional("CELERY_TASK_DEFAULT_QUEUE") or "celery"
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis redelivers a task whose worker died (acks_late) after this many seconds.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}

# Periodic work, in both modes: `celery beat` with a broker, a thread in-process otherwise.
CELERY_BEAT_SCHEDULE: dict[str, BeatEntry] = {
    "sweep-cold-sessions": {"task": "memory_admin.tasks.sweep_cold_sessions", "schedule": 60.0},
    # Every 15 s: a job whose worker died is re-dispatched soon after its lease lapses.
    "retry-failed-jobs": {"task": "memory_admin.tasks.retry_failed_jobs", "schedule": 15.0},
    "compute-embeddings": {"task": "memory_admin.tasks.compute_embeddings", "schedule": 60.0},
    # Every 5 s: webhook deliveries whose turn has come (outbox, retried with backoff).
    "deliver-webhooks": {"task": "memory_admin.tasks.deliver_webhooks", "schedule": 5.0},
    # Every minute: expired observations (rebuilds, purge after the keep days), retention.
    "lifecycle-sweep": {"task": "memory_admin.tasks.lifecycle_sweep", "schedule": 60.0},
    # Every 10 minutes: scopes whose pending observations waited MEMORY_CONSOLIDATE_AFTER_DAYS.
    "sweep-aged-pending": {"task": "memory_admin.tasks.sweep_aged_pending", "schedule": 600.0},
}
