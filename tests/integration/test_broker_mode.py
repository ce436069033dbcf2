"""The write-path suite again, with every job run by a real Celery worker through Redis.

The same test files, the same assertions: tests/task_mode.py switches them from
in-process jobs to tasks sent through Redis to one `celery worker` subprocess that
uses this run's embedded store and fake OpenAI server, and makes the tests wait for
the job documents to reach a final status. The run starts beside the main suite
(tests/integration/side_runs.py); this test collects its result.
"""

from __future__ import annotations

from tests.integration.side_runs import BROKER_TEST, side_run
from tests.services import needs_redis


@needs_redis
def test_the_write_path_suite_passes_with_a_real_worker_through_redis():
    code, output = side_run(BROKER_TEST).result()
    assert code == 0, output[-6000:]
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
