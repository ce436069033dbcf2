"""Start and stop a real Celery worker process for the integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start_worker(
    env: dict[str, str],
    *,
    app: str = "memory_admin",
    pool: tuple[str, ...] = ("--pool=solo",),
    log_path: Path | None = None,
    heartbeat: bool = False,
) -> subprocess.Popen:
    """One worker in its own process group (so SIGKILL reaches all of it); `heartbeat`
    keeps the broker heartbeat on, as `celery -A memory_admin worker` runs."""
    output = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    # The suite runs on the development settings; a worker defaults to DEBUG off.
    env = {"DJANGO_DEBUG": "true", **env}
    try:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                app,
                "worker",
                *pool,
                "--loglevel=WARNING",
                "--without-gossip",
                "--without-mingle",
                *(() if heartbeat else ("--without-heartbeat",)),
            ],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
    finally:
        if log_path:
            output.close()


def kill_worker(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll `condition` every 0.1 s until it holds; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
