"""Run the write-path suite's jobs in-process ("eager") or on a real Celery worker ("broker").

The default is eager: jobs run in this process, as on the embedded default. With
MEMORY_TEST_TASK_MODE=broker (tests/integration/test_broker_mode.py re-runs the
write-path files that way) every job is a task sent through Redis to one real
`celery worker` subprocess, and the tests wait for the job document to reach a final
status instead of assuming inline execution. The assertions stay the same in both modes.

How the worker sees each test's world: every task message carries, in a header, the
test's store settings (database name, URI), LLM settings (fake server URL, timeouts)
and the other MEMORY_* settings the test changed; the worker applies them before the
task runs (tests/integration/broker_app.py). Tasks the worker sends itself (follow-ups,
retries) carry its current settings on in the same way.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings

from memory_admin.jobs.inprocess import shipped_settings
from streams.core import exceptions as domain_exceptions
from streams.llm import port as llm_port
from streams.store import MemoryStore

TASK_MODE = os.environ.get("MEMORY_TEST_TASK_MODE", "eager")
BROKER = TASK_MODE == "broker"
QUEUE_ENV = "MEMORY_TEST_CELERY_QUEUE"
SETTINGS_HEADER = "memory_test_settings"
FINAL_TASK_STATES = {"SUCCESS", "FAILURE", "RETRY"}
WAIT_SECONDS = 60.0
WORKER_TASKS: list[str] = []  # ids of the tasks run_job sent (a check that the worker ran them)


def add_settings_header(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """`before_task_publish` handler: every task message carries the sender's settings."""
    if headers is not None:
        headers[SETTINGS_HEADER] = shipped_settings()  # what a job-runner child gets too


def apply_settings_header(task: Any = None, **_: Any) -> None:
    """`task_prerun` handler (worker): act with the settings of whoever sent the task."""
    snapshot = getattr(task.request, SETTINGS_HEADER, None) if task is not None else None
    if snapshot is None and task is not None:
        snapshot = (task.request.headers or {}).get(SETTINGS_HEADER)
    for name, value in (snapshot or {}).items():
        setattr(settings, name, value)


def _wait(condition: Callable[[], bool], what: Callable[[], str]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what()}")


def _recorded_error(error: str | None) -> Exception:
    """The worker's failure as the exception type it recorded (`Name: message`)."""
    name, _, message = (error or "Exception: unknown").partition(": ")
    classes: dict[str, type[Exception]] = {}
    for module in (domain_exceptions, llm_port):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Exception):
                classes[value.__name__] = value
    cls = classes.get(name, RuntimeError)
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    return exc


def run_job(*, store: MemoryStore, job_id: str, work: Callable[[Any], None]) -> Any:
    """Run one job: eager, `job_execute` here; broker, the job's task on the worker.

    Broker mode returns the job's recorded result (None if it had finished before) and
    raises the recorded error as its own type when the job failed.
    """
    from memory_admin.integrations.llm import get_llm_provider
    from memory_admin.jobs.tasks import TASKS_BY_KIND
    from streams.jobs import job_execute, job_get

    if not BROKER:
        return job_execute(store=store, job_id=job_id, llm=get_llm_provider(), work=work)
    before = job_get(store=store, job_id=job_id)
    sent = TASKS_BY_KIND[before.kind].apply_async(args=[job_id])
    WORKER_TASKS.append(sent.id)
    _wait(lambda: sent.state in FINAL_TASK_STATES, lambda: f"the worker to run job {job_id}")
    job = job_get(store=store, job_id=job_id)
    if before.status in ("succeeded", "failed") and job.finished_at == before.finished_at:
        return None  # nothing ran, as a duplicate delivery in-process returns None
    if job.status == "failed":
        raise _recorded_error(job.error)
    return SimpleNamespace(job=job, result=job.result)


def settle(store: MemoryStore) -> None:
    """Broker mode: wait until no job is queued or running (follow-ups included)."""
    if not BROKER:
        return

    def unfinished() -> list[Any]:
        return [
            job
            for status in ("queued", "running")
            for job in store.jobs.page(status=status, agent_id=None, before=None, limit=20)
        ]

    _wait(
        lambda: not unfinished(),
        lambda: "jobs to finish: " + ", ".join(f"{j.kind} {j.status}" for j in unfinished()),
    )


@contextlib.contextmanager
def tasks_run(capture: Callable[..., Any], store: MemoryStore) -> Iterator[None]:
    """Dispatch the tasks queued on commit inside the block, and wait for their jobs."""
    with capture(execute=True):
        yield
    settle(store)


@pytest.fixture(scope="session", autouse=True)
def broker_worker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Broker mode: one real worker for the run, on this run's own queue."""
    if not BROKER:
        yield None
        return
    import redis
    from celery import signals

    from memory_admin.celery import app
    from tests.integration.workers import kill_worker, start_worker

    embedded_mongo = request.getfixturevalue("embedded_mongo")
    queue = os.environ.setdefault(QUEUE_ENV, f"memory-test-{uuid.uuid4().hex[:12]}")
    app.conf.task_default_queue = queue
    assert not app.conf.task_always_eager, "broker mode needs CELERY_BROKER_URL"
    signals.before_task_publish.connect(add_settings_header, weak=False)
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    worker = start_worker(
        {**os.environ, "MONGODB_URI": embedded_mongo.uri},
        app="tests.integration.broker_app",
        pool=("--pool=prefork", "--concurrency=2"),
        log_path=log_path,
    )
    # The message carries this process's settings: without the run's store the worker
    # would start the app's default embedded store in the checkout's var/ and leave it.
    settings.MONGODB_URI = embedded_mongo.uri
    try:
        app.send_task("memory_admin.tasks.check_store").get(timeout=WAIT_SECONDS)
        yield worker
    finally:
        kill_worker(worker)
        signals.before_task_publish.disconnect(add_settings_header)
        redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).delete(queue)
        if request.session.testsfailed:
            print(f"\nworker log ({log_path}):\n" + log_path.read_text()[-6000:])


@pytest.fixture
def run_tasks(django_capture_on_commit_callbacks: Any, store: MemoryStore) -> Callable[[], Any]:
    """`with run_tasks():` dispatches what the block queued on commit and waits for the jobs."""
    return lambda: tasks_run(django_capture_on_commit_callbacks, store)
