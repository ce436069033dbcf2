"""The write-path suite again, with every job run by a real Celery worker through Redis.

The same test files, the same assertions: tests/task_mode.py switches them from
in-process jobs to tasks sent through Redis to one `celery worker` subprocess that
uses this run's embedded store and fake OpenAI server, and makes the tests wait for
the job documents to reach a final status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from tests.services import REDIS_URL, needs_redis

ROOT = Path(__file__).resolve().parents[2]
BROKER_REDIS_URL = REDIS_URL.rsplit("/", 1)[0] + "/12"  # runs are kept apart by their queue
WRITE_PATH_SUITE = [
    "tests/streams/test_formation.py",
    "tests/streams/test_consolidation_runs.py",
    "tests/api/test_ingest.py",
    "tests/api/test_consolidation_api.py",
    "tests/test_tasks.py",
    "tests/streams/test_derived_memory.py",
]


@needs_redis
def test_the_write_path_suite_passes_with_a_real_worker_through_redis():
    env = {
        **os.environ,
        "MEMORY_TEST_TASK_MODE": "broker",
        "MEMORY_TEST_CELERY_QUEUE": f"memory-test-{uuid.uuid4().hex[:12]}",
        "CELERY_BROKER_URL": BROKER_REDIS_URL,
        "CELERY_RESULT_BACKEND": BROKER_REDIS_URL,
    }
    env.pop("MEMORY_TEST_MONGODB_URI", None)  # the run starts its own embedded store
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", *WRITE_PATH_SUITE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    summary = result.stdout.splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
