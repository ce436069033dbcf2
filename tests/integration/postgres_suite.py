"""The API suite and the UI's account tests again with Django's tables in PostgreSQL,
run beside the main suite.

The re-run is a pytest subprocess that takes minutes and mostly waits on its own
embedded store, so it starts as soon as collection ends (`start_early`, called from
tests/conftest.py) and `test_django_suites_pass_on_postgresql` collects its result at
the end; the two overlap instead of adding up in CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import IO

import pytest

from tests.services import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]
TEST_ID = "tests/integration/test_services.py::test_django_suites_pass_on_postgresql"
# The API suite (API keys, permissions, rate limits on every endpoint), and the UI and
# demo tests of Django's own tables: users, roles, passwords, sign-in throttling, the
# demo login. The other UI tests render memory read from MongoDB whichever database
# Django uses; they run on SQLite in the main suite (CI stays under 20 minutes).
DJANGO_SUITES = [
    "tests/api",
    "tests/ui/test_access.py",
    "tests/ui/test_roles.py",
    "tests/ui/test_people.py",
    "tests/ui/test_password.py",
    "tests/ui/test_login_throttle.py",
    "tests/test_demo.py::test_demo_login_is_created_once_and_printed",
]
# The fuzzing run exercises the API's contract, not Django's tables, and takes minutes.
NOT_AGAIN = ["tests/api/test_schemathesis.py"]
TIMEOUT_SECONDS = 900


class PostgresSuite:
    def __init__(self) -> None:
        database = f"memory_admin_ci_{uuid.uuid4().hex[:8]}"
        env = {**os.environ, "DATABASE_URL": POSTGRES_URL.rsplit("/", 1)[0] + f"/{database}"}
        env.pop("MEMORY_TEST_MONGODB_URI", None)  # the re-run starts its own embedded store
        self.output: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 (read in result)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-x",
                "-m",
                "not browser",
                "--create-db",
                *[f"--deselect={s}" for s in NOT_AGAIN],
                *[s for s in DJANGO_SUITES if (ROOT / s.split("::")[0]).exists()],
            ],
            cwd=ROOT,
            env=env,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def result(self) -> tuple[int, str]:
        """Wait for the re-run; its exit code and its output."""
        try:
            code = self.process.wait(timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.output.seek(0)
        return code, self.output.read()


_started: PostgresSuite | None = None


def start_early(session: pytest.Session) -> None:
    """Start the re-run now if this session will run its test and will not skip it."""
    global _started
    item = next((i for i in session.items if i.nodeid == TEST_ID), None)
    if item is None or _started is not None:
        return
    skip = item.get_closest_marker("skipif")
    if skip is not None and skip.args and skip.args[0]:
        return
    _started = PostgresSuite()


def postgres_suite() -> PostgresSuite:
    """The re-run started early, or one started now (the test run on its own)."""
    global _started
    if _started is None:
        _started = PostgresSuite()
    return _started
