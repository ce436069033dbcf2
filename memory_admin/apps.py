from __future__ import annotations

from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    name = "memory_admin"
    verbose_name = "Memory admin"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Let the domain's actions hand their jobs to the task queue (see `streams.actions`)."""
        from memory_admin.tasks import enqueue_all
        from streams.actions import register_dispatcher

        register_dispatcher(enqueue_all)
