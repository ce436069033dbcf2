"""The in-process periodic loop: quiet on success, loud on failure, never stopped by one."""

from __future__ import annotations

import logging

import pytest

from memory_admin.celery import app
from memory_admin.jobs import scheduler


@pytest.fixture
def sweep_task():
    calls: list[str] = []

    @app.task(name="tests.scheduler_sweep")
    def sweep() -> None:
        calls.append("ran")

    @app.task(name="tests.scheduler_failing_sweep")
    def failing_sweep() -> None:
        raise RuntimeError("store unreachable")

    yield calls
    app.tasks.pop("tests.scheduler_sweep", None)
    app.tasks.pop("tests.scheduler_failing_sweep", None)


def test_a_periodic_sweep_runs_without_celerys_success_line(sweep_task, caplog):
    caplog.set_level(logging.INFO)
    scheduler.run_periodic_task(app, "tests.scheduler_sweep")
    assert sweep_task == ["ran"]
    assert not [r for r in caplog.records if r.name.startswith("celery")]


def test_a_failing_sweep_is_logged_and_does_not_raise(sweep_task, caplog):
    scheduler.run_periodic_task(app, "tests.scheduler_failing_sweep")
    failures = [r for r in caplog.records if r.name == "memory_admin.jobs.scheduler"]
    assert failures and "tests.scheduler_failing_sweep" in failures[0].getMessage()
    assert failures[0].exc_info and "store unreachable" in str(failures[0].exc_info[1])
