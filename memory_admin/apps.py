from __future__ import annotations

from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    name = "memory_admin"
    verbose_name = "Memory admin"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Let the domain's actions hand their jobs to the task queue (see `streams.actions`),
        and its large writes take the host's large-request slots (`streams.memory.large_work`)."""
        import memory_admin.checks  # noqa: F401 (registers the system checks)
        from memory_admin.large_requests import large_job_slot
        from memory_admin.tasks import enqueue_all
        from streams.actions import register_dispatcher
        from streams.memory.large_work import register_large_work_gate

        register_dispatcher(enqueue_all)
        register_large_work_gate(large_job_slot)
