"""Suites run again in a subprocess beside the main one, with other services.

- The tests of Django's tables (API keys, permissions, users) in PostgreSQL
  (`test_django_suites_pass_on_postgresql`).
- The write-path suite with every job run by a real Celery worker through Redis
  (`test_the_write_path_suite_passes_with_a_real_worker_through_redis`).

Each re-run is a pytest subprocess that takes minutes and mostly waits on its own
embedded store, so it starts as soon as collection ends (`start_early`, called from
tests/conftest.py) and its test collects the result; the runs overlap instead of
adding up in CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from tests.services import POSTGRES_URL, REDIS_URL

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_SECONDS = 900

POSTGRES_TEST = "tests/integration/test_services.py::test_django_suites_pass_on_postgresql"
# The tests of Django's own tables: API keys and their permissions (every endpoint, bound
# and admin keys, revocation), the management commands that make keys, the rate limits,
# the in-process pool's child with this process's database settings, concurrent writers,
# and the UI's users, roles, passwords, sign-in throttling and demo login. The rest of the
# API and UI suites read and write MongoDB whichever database Django uses, and reach
# Django's tables only through the key lookup these cover; they run on SQLite in the main
# suite (the whole API suite ran here until this machine's CI took over 30 minutes).
DJANGO_SUITES = [
    "tests/api/test_auth.py",
    "tests/api/test_permissions.py",
    "tests/api/test_commands.py",
    "tests/api/test_chat_completions.py",
    "tests/api/test_chat_edges.py",
    "tests/api/test_never_block.py",
    "tests/api/test_ingest_forget_race.py",
    "tests/api/test_bulk.py",
    "tests/api/test_feedback_api.py",
    "tests/api/test_review_api.py",
    "tests/ui/test_access.py",
    "tests/ui/test_roles.py",
    "tests/ui/test_people.py",
    "tests/ui/test_password.py",
    "tests/ui/test_login_throttle.py",
    "tests/test_demo.py::test_demo_login_is_created_once_and_printed",
]

BROKER_TEST = (
    "tests/integration/test_broker_mode.py::"
    "test_the_write_path_suite_passes_with_a_real_worker_through_redis"
)
WRITE_PATH_SUITE = [
    "tests/streams/test_formation.py",
    "tests/streams/test_consolidation_runs.py",
    "tests/api/test_ingest.py",
    "tests/api/test_consolidation_api.py",
    "tests/test_tasks.py",
    "tests/streams/test_derived_memory.py",
]
BROKER_REDIS_URL = REDIS_URL.rsplit("/", 1)[0] + "/12"  # runs are kept apart by their queue


class SideRun:
    """One pytest subprocess with `env` over the main run's environment; its own
    embedded store (the main run's is not passed on)."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        full = {**os.environ, **env}
        full.pop("MEMORY_TEST_MONGODB_URI", None)
        self.output: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 (read in result)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-x", *args],
            cwd=ROOT,
            env=full,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def result(self) -> tuple[int, str]:
        """Wait for the run; its exit code and its output."""
        try:
            code = self.process.wait(timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.output.seek(0)
        return code, self.output.read()


def _postgres_run() -> SideRun:
    database = f"memory_admin_ci_{uuid.uuid4().hex[:8]}"
    return SideRun(
        [
            "-m",
            "not browser",
            "--create-db",
            *[s for s in DJANGO_SUITES if (ROOT / s.split("::")[0]).exists()],
        ],
        {"DATABASE_URL": POSTGRES_URL.rsplit("/", 1)[0] + f"/{database}"},
    )


def _broker_run() -> SideRun:
    return SideRun(
        ["-p", "no:randomly", *WRITE_PATH_SUITE],
        {
            "MEMORY_TEST_TASK_MODE": "broker",
            "MEMORY_TEST_CELERY_QUEUE": f"memory-test-{uuid.uuid4().hex[:12]}",
            "CELERY_BROKER_URL": BROKER_REDIS_URL,
            "CELERY_RESULT_BACKEND": BROKER_REDIS_URL,
        },
    )


RUNS: dict[str, Callable[[], SideRun]] = {POSTGRES_TEST: _postgres_run, BROKER_TEST: _broker_run}
_started: dict[str, SideRun] = {}


def start_early(session: pytest.Session) -> None:
    """Start each re-run whose test this session will run and will not skip."""
    for item in session.items:
        if item.nodeid not in RUNS or item.nodeid in _started:
            continue
        skip = item.get_closest_marker("skipif")
        if skip is not None and skip.args and skip.args[0]:
            continue
        _started[item.nodeid] = RUNS[item.nodeid]()


def side_run(test_id: str) -> SideRun:
    """The re-run started early, or one started now (its test run on its own)."""
    if test_id not in _started:
        _started[test_id] = RUNS[test_id]()
    return _started[test_id]
