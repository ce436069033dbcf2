"""Suites run again in a subprocess beside the main one, with other services.

- The tests of Django's tables (API keys, permissions, users) in PostgreSQL
  (`test_django_suites_pass_on_postgresql`).
- The write-path suite with every job run by a real Celery worker through Redis
  (`test_the_write_path_suite_passes_with_a_real_worker_through_redis`).

Each re-run is a pytest subprocess that takes minutes and mostly waits on its own
embedded store, so it starts as soon as collection ends (`start_early`, called from
tests/conftest.py) and its test collects the result; the runs overlap instead of
adding up in CI.

Under pytest-xdist every worker collects every test, but only the first (gw0) starts
the re-runs; whichever worker then runs the test reads the run's output and exit code
from files in a folder the workers share (named by the run's xdist id).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

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
    "tests/streams/memory/test_formation.py",
    "tests/streams/memory/test_consolidation_runs.py",
    "tests/api/test_ingest.py",
    "tests/api/test_consolidation_api.py",
    "tests/test_tasks.py",
    "tests/streams/memory/test_derived_memory.py",
]
BROKER_REDIS_URL = REDIS_URL.rsplit("/", 1)[0] + "/12"  # runs are kept apart by their queue


# What an xdist worker is told of its run; a re-run is a run of its own, on no worker.
XDIST_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")
# The re-run's exit code, written when it ends, so any worker can wait for it; a SIGTERM
# (the timeout) kills the re-run.
WRAPPER = """
import os, signal, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *_: child.kill())
code = child.wait()
open(sys.argv[1] + ".tmp", "w").write(str(code))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


@functools.cache
def shared_dir() -> Path:
    """Where re-runs leave their output: one folder for all of one run's xdist workers
    (a new one for a run without xdist)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return Path(tempfile.mkdtemp(prefix="memory-side-runs-"))
    path = Path(tempfile.gettempdir()) / f"memory-side-runs-{run}"
    path.mkdir(exist_ok=True)
    return path


class SideRun:
    """One pytest subprocess with `env` over the main run's environment; its own
    embedded store (the main run's is not passed on). Its output and exit code are
    files under `shared_dir()`, named by `name`."""

    def __init__(self, name: str) -> None:
        base = shared_dir() / name
        self.output_path = base.with_suffix(".out")
        self.code_path = base.with_suffix(".code")
        self.process: subprocess.Popen[str] | None = None

    @property
    def started(self) -> bool:
        return self.output_path.exists()

    def start(self, args: list[str], env: dict[str, str]) -> SideRun:
        full = {**os.environ, **env}
        for name in ("MEMORY_TEST_MONGODB_URI", *XDIST_ENV):
            full.pop(name, None)
        with self.output_path.open("w") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-c", WRAPPER, str(self.code_path)]
                + [sys.executable, "-m", "pytest", "-q", "-x", *args],
                cwd=ROOT,
                env=full,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
            )
        (self.output_path.with_suffix(".pid")).write_text(str(self.process.pid))
        return self

    def result(self) -> tuple[int, str]:
        """Wait for the run (started here or by another worker); its exit code and output."""
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while not self.code_path.exists() and time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                time.sleep(0.2)  # the wrapper wrote the code just before it ended
                break
            time.sleep(0.5)
        if not self.code_path.exists():
            pid = int(self.output_path.with_suffix(".pid").read_text())
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            time.sleep(1)
            return -9, self.output_path.read_text()
        return int(self.code_path.read_text()), self.output_path.read_text()


def _postgres_run() -> SideRun:
    database = f"memory_admin_ci_{uuid.uuid4().hex[:8]}"
    return SideRun("postgres").start(
        [
            "-m",
            "not browser",
            "--create-db",
            *[s for s in DJANGO_SUITES if (ROOT / s.split("::")[0]).exists()],
        ],
        {"DATABASE_URL": POSTGRES_URL.rsplit("/", 1)[0] + f"/{database}"},
    )


def _broker_run() -> SideRun:
    return SideRun("broker").start(
        ["-p", "no:randomly", *WRITE_PATH_SUITE],
        {
            "MEMORY_TEST_TASK_MODE": "broker",
            "MEMORY_TEST_CELERY_QUEUE": f"memory-test-{uuid.uuid4().hex[:12]}",
            "CELERY_BROKER_URL": BROKER_REDIS_URL,
            "CELERY_RESULT_BACKEND": BROKER_REDIS_URL,
        },
    )


RUNS: dict[str, tuple[str, Callable[[], SideRun]]] = {
    POSTGRES_TEST: ("postgres", _postgres_run),
    BROKER_TEST: ("broker", _broker_run),
}
_started: dict[str, SideRun] = {}


def start_early(session: pytest.Session) -> None:
    """Start each re-run whose test this session will run and will not skip (under
    xdist, on the first worker only: every worker collects every test)."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return
    for item in session.items:
        if item.nodeid not in RUNS or item.nodeid in _started:
            continue
        skip = item.get_closest_marker("skipif")
        if skip is not None and skip.args and skip.args[0]:
            continue
        _started[item.nodeid] = RUNS[item.nodeid][1]()


def side_run(test_id: str) -> SideRun:
    """The re-run started early (by this process or another worker), or one started now
    (its test run on its own)."""
    if test_id not in _started:
        name, start = RUNS[test_id]
        run = SideRun(name)
        _started[test_id] = run if run.started else start()
    return _started[test_id]
