from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from streams.core.documents import Job


def dispatch_jobs(jobs: list[Job]) -> None:
    """The domain's dispatcher: the task queue (`memory_admin.jobs.tasks.enqueue_all`), imported
    on the first job, not at start-up: a quick command such as `create_api_key` queues no
    job and would pay for Celery, the formation code and the store client (issue 40)."""
    from memory_admin.jobs.tasks import enqueue_all

    enqueue_all(jobs)


@contextmanager
def large_work_slot(size: int) -> Iterator[None]:
    """The large-work gate (`memory_admin.web.large_requests.large_job_slot`), imported on the
    first large write, for the same reason."""
    from memory_admin.web.large_requests import large_job_slot

    with large_job_slot(size):
        yield


class MemoryAdminConfig(AppConfig):
    name = "memory_admin"
    verbose_name = "Memory admin"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Let the domain's actions hand their jobs to the task queue (see `streams.actions`),
        and its large writes take the host's large-request slots (`streams.memory.large_work`);
        both load what they need on first use."""
        import memory_admin.checks  # noqa: F401 (registers the system checks)
        from streams.actions import register_dispatcher
        from streams.memory.large_work import register_large_work_gate

        register_dispatcher(dispatch_jobs)
        register_large_work_gate(large_work_slot)
