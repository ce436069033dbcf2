"""Celery tasks: thin, idempotent wrappers that take a job id, re-fetch, and call one service.

With a broker, real workers run them and retry failures with backoff. On the
embedded default they run in a bounded pool of background threads
(`memory_admin.jobs.inprocess`), each handing its jobs to a low-priority child process
(`memory_admin.jobs.runner`), never in the request; a failed job is then retried
by the periodic `retry_failed_jobs` sweep. MEMORY_INPROCESS_WORKERS=0 runs them
synchronously right after the request's transaction commits (the test suite).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction

from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.integrations.llm import get_llm_provider
from memory_admin.jobs import inprocess
from memory_admin.stores import get_store
from streams.actions.chat import chat_catch_up_run
from streams.actions.chat_ingest import chat_ingest_run
from streams.actions.jobs import do_jobs_recover, do_propagation_run
from streams.core.documents import Job, utcnow
from streams.drafts.experiments import experiment_run
from streams.jobs import JobRun, job_execute
from streams.memory.bulk_job import bulk_run
from streams.memory.bulk_undo import bulk_undo_run
from streams.memory.consolidation_age import aged_consolidations_sweep
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import FormationSettings, cold_sessions_sweep, formation_run
from streams.memory.rebuild import rebuild_run
from streams.memory.source_change import source_change_run
from streams.people.privacy import forget_user_run
from streams.search.embeddings import embeddings_after_job, embeddings_compute

logger = logging.getLogger("memory_admin.jobs.tasks")
MAX_ATTEMPTS = 5
RETRY_BACKOFF_SECONDS = 30
TASK_OPTIONS = {
    "bind": True,
    "acks_late": True,
    "retry_backoff": True,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": MAX_ATTEMPTS - 1,
}


def formation_settings() -> FormationSettings:
    return FormationSettings(
        max_messages=settings.MEMORY_FORMATION_MAX_MESSAGES,
        max_tokens=settings.MEMORY_FORMATION_MAX_TOKENS,
        min_messages=settings.MEMORY_FORMATION_MIN_MESSAGES,
        cold_minutes=settings.MEMORY_COLD_SESSION_MINUTES,
        lease_seconds=settings.MEMORY_JOB_STALE_SECONDS,
    )


def enqueue(job: Job) -> None:
    """Queue a job's task once the current transaction (if any) commits: to the broker,
    or, on the embedded default, to the in-process pool (never run in the request)."""
    task = TASKS_BY_KIND[job.kind]
    if inprocess.enabled():
        transaction.on_commit(lambda: inprocess.submit(task, job.id))
    else:
        transaction.on_commit(lambda: _send(task, job))


def dispatch_now(job: Job) -> None:
    """Queue a job's task at once, for work outside any request or transaction (the chat
    proxy's after-answer thread): no `on_commit`, so no database connection is needed."""
    task = TASKS_BY_KIND[job.kind]
    if inprocess.enabled():
        inprocess.submit(task, job.id)
    else:
        _send(task, job)


def _send(task, job: Job) -> None:
    """Hand a committed job to the broker. A broker that cannot be reached (Redis down)
    does not fail the caller's request, whose write has committed: the job document
    stays `queued`, and `retry_failed_jobs` re-dispatches it once it is older than
    MEMORY_JOB_STALE_SECONDS (the multi-host rehearsal answered 500 here)."""
    try:
        task.delay(job.id)
    except Exception as exc:  # kombu's OperationalError, or any transport error
        logger.warning(
            "job %s (%s) committed but not sent to the broker, left queued for the "
            "recovery sweep: %s",
            job.id,
            job.kind,
            exc,
        )


def enqueue_all(jobs: list[Job]) -> None:
    """Queue the jobs a domain action scheduled (its `follow_ups`)."""
    for job in jobs:
        enqueue(job)


def _execute(task, job_id: str, work: Callable[[JobRun], None]) -> None:
    try:
        run = job_execute(
            store=get_store(),
            job_id=job_id,
            llm=get_llm_provider(),
            work=_then_embed(work),
            stale_after=timedelta(seconds=settings.MEMORY_JOB_STALE_SECONDS),
        )
    except Exception as exc:
        if task.request.is_eager:
            return  # recorded as failed; `retry_failed_jobs` tries again later
        raise task.retry(exc=exc) from exc
    if run is not None:
        for follow_up in run.follow_ups:
            enqueue(follow_up)


def _then_embed(work: Callable[[JobRun], None]) -> Callable[[JobRun], None]:
    """The job's work, then the embeddings of what it wrote (by the same job, never by
    the request; a no-op without a semantic layer)."""

    def run(job_run: JobRun) -> None:
        work(job_run)
        ranker = semantic_ranker()
        if ranker is not None and job_run.job.started_at is not None:
            embedded = embeddings_after_job(
                store=get_store(), ranker=ranker, started=job_run.job.started_at
            )
            if embedded:
                job_run.result["embedded"] = embedded

    return run


@shared_task(name="memory_admin.tasks.run_formation", **TASK_OPTIONS)
def run_formation(self, job_id: str) -> None:
    store = get_store()
    _execute(
        self, job_id, lambda run: formation_run(store=store, run=run, settings=formation_settings())
    )


@shared_task(name="memory_admin.tasks.run_consolidation", **TASK_OPTIONS)
def run_consolidation(self, job_id: str) -> None:
    store = get_store()
    lease = timedelta(seconds=settings.MEMORY_CONSOLIDATION_LEASE_SECONDS)
    floor = settings.MEMORY_FIDELITY_FLOOR
    chunk_tokens = settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS
    _execute(
        self,
        job_id,
        lambda run: consolidation_run(
            store=store, run=run, lease=lease, fidelity_floor=floor, chunk_tokens=chunk_tokens
        ),
    )


@shared_task(name="memory_admin.tasks.run_propagation", **TASK_OPTIONS)
def run_propagation(self, job_id: str) -> None:
    store = get_store()
    _execute(self, job_id, lambda run: do_propagation_run(store=store, run=run))


@shared_task(name="memory_admin.tasks.run_forget_user", **TASK_OPTIONS)
def run_forget_user(self, job_id: str) -> None:
    store = get_store()
    lease = timedelta(seconds=settings.MEMORY_CONSOLIDATION_LEASE_SECONDS)
    _execute(self, job_id, lambda run: forget_user_run(store=store, run=run, lease=lease))


@shared_task(name="memory_admin.tasks.run_rebuild", **TASK_OPTIONS)
def run_rebuild(self, job_id: str) -> None:
    store = get_store()
    lease = timedelta(seconds=settings.MEMORY_CONSOLIDATION_LEASE_SECONDS)
    chunk_tokens = settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS
    _execute(
        self,
        job_id,
        lambda run: rebuild_run(store=store, run=run, lease=lease, chunk_tokens=chunk_tokens),
    )


@shared_task(name="memory_admin.tasks.run_chat_ingest", **TASK_OPTIONS)
def run_chat_ingest(self, job_id: str) -> None:
    """Buffer a proxied chat turn (queued once its answer was sent); formation follows."""
    store = get_store()
    _execute(
        self,
        job_id,
        lambda run: chat_ingest_run(store=store, run=run, settings=formation_settings()),
    )


@shared_task(name="memory_admin.tasks.run_bulk", **TASK_OPTIONS)
def run_bulk(self, job_id: str) -> None:
    """A bulk action by filter, batch by batch; a retried job resumes at its progress."""
    store = get_store()
    _execute(self, job_id, lambda run: bulk_run(store=store, run=run))


@shared_task(name="memory_admin.tasks.run_bulk_undo", **TASK_OPTIONS)
def run_bulk_undo(self, job_id: str) -> None:
    """A bulk action taken back, batch by batch; a retried job resumes at its progress."""
    store = get_store()
    _execute(self, job_id, lambda run: bulk_undo_run(store=store, run=run))


@shared_task(name="memory_admin.tasks.run_source_change", **TASK_OPTIONS)
def run_source_change(self, job_id: str) -> None:
    """What follows an edit, delete, merge or marking private: copies out, the context log
    scrubbed, then the rebuilds (the outbox job the change committed with)."""
    store = get_store()
    _execute(self, job_id, lambda run: source_change_run(store=store, run=run))


@shared_task(name="memory_admin.tasks.run_chat_catch_up", **TASK_OPTIONS)
def run_chat_catch_up(self, job_id: str) -> None:
    """A chat call filed after the answer: scrub what was removed while it was answered
    (the outbox job the call's record committed with; ids and digests only)."""
    store = get_store()
    _execute(self, job_id, lambda run: chat_catch_up_run(store=store, run=run))


@shared_task(name="memory_admin.tasks.run_prompt_experiment", **TASK_OPTIONS)
def run_prompt_experiment(self, job_id: str) -> None:
    """A draft prompt beside the prompt in effect over a scope's recent inputs, within
    its budget; writes the experiment's document only."""
    store = get_store()
    _execute(self, job_id, lambda run: experiment_run(store=store, run=run))


TASKS_BY_KIND = {
    "formation": run_formation,
    "consolidation": run_consolidation,
    "propagation": run_propagation,
    "forget_user": run_forget_user,
    "rebuild": run_rebuild,
    "chat_ingest": run_chat_ingest,
    "bulk": run_bulk,
    "bulk_undo": run_bulk_undo,
    "source_change": run_source_change,
    "chat_catch_up": run_chat_catch_up,
    "prompt_experiment": run_prompt_experiment,
}


@shared_task(name="memory_admin.tasks.sweep_cold_sessions")
def sweep_cold_sessions() -> int:
    """Form sessions idle for MEMORY_COLD_SESSION_MINUTES with enough unformed messages."""
    jobs = cold_sessions_sweep(store=get_store(), settings=formation_settings())
    for job in jobs:
        enqueue(job)
    return len(jobs)


@shared_task(name="memory_admin.tasks.sweep_aged_pending")
def sweep_aged_pending() -> int:
    """Consolidate scopes below their threshold whose pending observations waited
    MEMORY_CONSOLIDATE_AFTER_DAYS (`streams.memory.consolidation_age`)."""
    jobs = aged_consolidations_sweep(store=get_store())
    for job in jobs:
        enqueue(job)
    return len(jobs)


@shared_task(name="memory_admin.tasks.retry_failed_jobs")
def retry_failed_jobs() -> int:
    """Re-dispatch jobs that need it: failed ones whose backoff has passed, and "running"
    ones whose worker died, and "queued" ones nobody dispatched (the outbox: an action
    committed its jobs and its process died before sending them), both older than
    MEMORY_JOB_STALE_SECONDS (`streams.actions.jobs.do_jobs_recover`).

    Recovery does not depend on the broker redelivering a dead worker's task.
    """
    now = utcnow()
    jobs = do_jobs_recover(
        store=get_store(),
        now=now,
        stale_before=now - timedelta(seconds=settings.MEMORY_JOB_STALE_SECONDS),
        max_attempts=MAX_ATTEMPTS,
        backoff=lambda attempts: timedelta(
            seconds=RETRY_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0)
        ),
    )
    return len(jobs)


@shared_task(name="memory_admin.tasks.deliver_webhooks")
def deliver_webhooks() -> dict[str, int]:
    """Periodic: the webhook outbox's entries whose turn has come, handed to the delivery
    pool (a per-agent cap; `memory_admin.integrations.webhooks`): returns without waiting on any
    receiver. Never runs in a request."""
    from memory_admin.integrations.webhooks import dispatch_due

    return dispatch_due(get_store())


@shared_task(name="memory_admin.tasks.check_store")
def check_store() -> dict[str, str]:
    """Prove a worker reaches the store (used by the worker smoke test)."""
    get_store().ping()
    return {"store": "ok"}


@shared_task(name="memory_admin.tasks.compute_embeddings")
def compute_embeddings() -> int:
    """Periodic: embed the observations written since the last run (those a request added;
    a job embeds its own); a no-op without a semantic layer. Never part of a write."""
    ranker = semantic_ranker()
    if ranker is None:
        return 0
    return embeddings_compute(store=get_store(), provider=ranker.provider, model=ranker.model)


@shared_task(name="memory_admin.tasks.lifecycle_sweep")
def lifecycle_sweep() -> dict[str, int]:
    """Periodic: handle expired observations (out of search and pending, consolidations
    that absorbed them rebuilt), purge them MEMORY_EXPIRED_KEEP_DAYS later (resumable:
    each observation is claimed once); then retention for scopes with a cap."""
    from streams.actions.sweeps import do_expiry_sweep, do_retention_sweep

    store = get_store()
    result = do_expiry_sweep(store=store, keep_days=settings.MEMORY_EXPIRED_KEEP_DAYS)
    enqueue_all(result.follow_ups)
    return {**result.as_dict(), "retention_purged": do_retention_sweep(store=store)}
