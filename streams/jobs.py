"""Jobs: every piece of background work is a document with status, timings and LLM calls.

`job_execute` is what a Celery task (or the in-process runner) calls: it moves
the job to running, runs the work, and records the outcome. It is idempotent:
a finished job is not run again, and a job left "running" by a killed worker
is taken over once its claim is stale.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from streams.core.documents import Job, JobKind, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import parse_object_id, require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.llm.json_answer import failed_call, json_read_noted
from streams.llm.port import LLMError, LLMProvider, LLMRequest, LLMResult
from streams.records.usage import usage_record
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

logger = logging.getLogger("streams.jobs")
STALE_RUNNING_AFTER = timedelta(seconds=30)


@dataclass
class JobRun:
    """What the work of a job sees: the job, and an LLM that counts its calls."""

    job: Job
    llm: CountingLLM
    result: dict[str, Any] = field(default_factory=dict)
    follow_ups: list[Job] = field(default_factory=list)  # jobs to enqueue once this one is done
    # Leases the work holds besides the job's own (a formation's claim on its session),
    # renewed with it: each is called with the time of the heartbeat.
    renewals: list[Callable[[datetime], object]] = field(default_factory=list)
    # A running job whose heartbeat is older than this is dead (`job_execute`'s).
    stale_after: timedelta = STALE_RUNNING_AFTER


class CountingLLM:
    """Wraps the provider so each job records how many LLM calls it made, failed ones too."""

    def __init__(self, provider: LLMProvider) -> None:
        self.provider = provider
        self.name = provider.name
        self.calls = 0
        self.results: list[LLMResult] = []

    def complete(self, request: LLMRequest) -> LLMResult:
        self.calls += 1
        try:
            answer = self.provider.complete(request)
        except LLMError as exc:
            # A call that timed out or was cut at max_tokens is counted per model and
            # task too (`cut`, `timeouts`): it is a way a real model fails.
            self.results.append(failed_call(request, exc, provider=self.provider))
            raise
        result = json_read_noted(request, answer)
        self.results.append(result)
        return result


def job_create(
    *,
    store: MemoryStore,
    kind: JobKind,
    agent_id: str,
    scope_id: str | None = None,
    session_id: str | None = None,
    trigger: str | None = None,
    actor: str | None = None,
    payload: dict[str, Any] | None = None,
    job_id: str | None = None,
    session: StoreSession | None = None,
    writes: WriteBatch | None = None,
) -> Job:
    job = Job(
        kind=kind,
        agent_id=agent_id,
        scope_id=scope_id,
        session_id=session_id,
        trigger=trigger,
        actor=actor,
        payload=payload or {},
    )
    if job_id is not None:
        job.id = job_id
    store.jobs.insert(job, session=session, writes=writes)
    return job


def job_get(*, store: MemoryStore, job_id: str, agent_ids: frozenset[str] | None = None) -> Job:
    job = store.jobs.get(require_object_id(job_id, what="job"))
    if job is None or (agent_ids is not None and job.agent_id not in agent_ids):
        raise NotFound("job not found")
    return job


def job_list(
    *,
    store: MemoryStore,
    status: str | None = None,
    agent_id: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
    kind: str | None = None,
    agent_ids: frozenset[str] | None = None,
) -> Page[Job]:
    """A page of jobs, newest first; `agent_ids` (an agent key's agents) bounds what is seen."""
    if agent_ids is not None and agent_id is not None and agent_id not in agent_ids:
        return Page(items=[], next_cursor=None)
    page_size = clamp_limit(limit)
    position = decode_cursor(cursor, required_keys=("before",))
    before = parse_object_id(position["before"]) if position else None
    if position and before is None:
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    items = store.jobs.page(
        status=status,
        agent_id=agent_id,
        before=before,
        limit=page_size,
        kind=kind,
        agent_ids=sorted(agent_ids) if agent_ids is not None and agent_id is None else None,
    )
    next_cursor = encode_cursor({"before": items[-1].id}) if len(items) == page_size else None
    return Page(items=items, next_cursor=next_cursor)


def job_execute(
    *,
    store: MemoryStore,
    job_id: str,
    llm: LLMProvider,
    work: Callable[[JobRun], None],
    stale_after: timedelta = STALE_RUNNING_AFTER,
) -> JobRun | None:
    """Run the job's work once; on failure record the error and re-raise (the caller retries)."""
    oid = require_object_id(job_id, what="job")
    now = utcnow()
    if not store.jobs.start(oid, now=now, stale_before=now - stale_after):
        if store.jobs.get(oid) is None:
            raise NotFound("job not found")
        return None  # finished already, or running in another worker
    job = store.jobs.get(oid)
    assert job is not None
    run = JobRun(job=job, llm=CountingLLM(llm), stale_after=stale_after)
    heartbeat = _Heartbeat(store, run, interval=stale_after.total_seconds() / 3)
    heartbeat.start()
    try:
        work(run)
    except Exception as exc:
        heartbeat.stop()
        store.jobs.finish(
            oid,
            status="failed",
            now=utcnow(),
            error=_describe(exc),
            llm_calls=run.llm.calls,
            result=run.result,
        )
        logger.warning("job %s (%s) failed: %s", job_id, job.kind, _describe(exc))
        usage_record(store=store, job=job, results=run.llm.results, result=run.result, failed=True)
        raise
    finally:
        heartbeat.stop()
    store.jobs.finish(
        oid, status="succeeded", now=utcnow(), result=run.result, llm_calls=run.llm.calls
    )
    usage_record(store=store, job=job, results=run.llm.results, result=run.result, failed=False)
    return run


def scope_lease_take(*, store: MemoryStore, run: JobRun, scope_id: str, lease: timedelta) -> bool:
    """Take the scope's consolidation lease (one run at a time per scope) for `run`'s job,
    until now + `lease`; False when the scope does not exist.

    The lease names the job holding it. It is taken when it is free or expired; when
    this job holds it already (its earlier attempt's runner or store was killed, and
    the job was taken over: the lease comes back at once); and when the job holding it
    is no longer alive (finished, back in the queue, gone, or running without a
    heartbeat for `run.stale_after`). A live run holding it raises Conflict naming it:
    the job fails and is retried, it never reports success for work it did not do.
    """
    oid = require_object_id(scope_id, what="scope")
    owner = run.job.id
    for _ in range(3):  # the holder may change between the reads and the writes
        now = utcnow()
        until = now + lease
        if store.scopes.acquire_lease(oid, owner=owner, now=now, until=until):
            return True
        if store.scopes.take_back_lease(oid, owner=owner, until=until):
            return True
        seen = store.scopes.lease_holder(oid)
        if seen is None:
            return False
        holder, held_until = seen
        if holder is None or held_until < now:
            continue  # released or expired meanwhile: acquire it
        if _alive(store, holder, stale_before=now - run.stale_after):
            raise Conflict(
                f"scope {scope_id} is being consolidated by another run (job {holder}, "
                f"lease until {held_until.isoformat()}); this job is retried later"
            )
        if store.scopes.take_over_lease(oid, holder=holder, owner=owner, until=until):
            logger.info("job %s took the lease of scope %s from dead job %s", owner, oid, holder)
            return True
    raise Conflict(f"scope {scope_id}'s lease keeps changing hands; this job is retried later")


def _alive(store: MemoryStore, holder: str, *, stale_before: datetime) -> bool:
    """Whether the run named `holder` may still be working (a holder that is no job id
    is someone else's: alive until its lease expires)."""
    holder_oid = parse_object_id(holder)
    if holder_oid is None:
        return True
    seen = store.jobs.last_beat(holder_oid)
    if seen is None or seen[0] != "running":
        return False
    return seen[1] is not None and seen[1] >= stale_before


def job_retry(
    *,
    store: MemoryStore,
    job_id: str,
    agent_ids: frozenset[str] | None = None,
    session: StoreSession | None = None,
) -> Job:
    """Put a failed job back in the queue (the caller enqueues it again, after its
    transaction `session` commits); 409 otherwise."""
    job = job_get(store=store, job_id=job_id, agent_ids=agent_ids)
    if not store.jobs.requeue(require_object_id(job_id, what="job"), session=session):
        raise Conflict(f"only a failed job can be retried; this one is {job.status}")
    return replace(job, status="queued")


def jobs_to_recover(
    *,
    store: MemoryStore,
    now: datetime,
    stale_before: datetime,
    max_attempts: int,
    backoff: Callable[[int], timedelta],
    limit: int = 100,
) -> list[Job]:
    """The jobs the recovery sweep dispatches again: failed ones whose `backoff` (by
    attempts) has passed, put back in the queue; "running" ones whose worker died; and
    "queued" ones committed but never dispatched (an outbox entry whose process died
    between its action's commit and the dispatch), both older than `stale_before`.
    Dispatching one twice is harmless: a job runs once."""
    due: list[Job] = []
    for job in store.jobs.page(status="failed", agent_id=None, before=None, limit=limit):
        if job.attempts >= max_attempts:
            continue
        if job.finished_at and job.finished_at > now - backoff(job.attempts):
            continue
        if store.jobs.requeue(job.id_oid):
            due.append(job)
    due.extend(store.jobs.stale_running(stale_before=stale_before, limit=limit))
    for job in store.jobs.page(status="queued", agent_id=None, before=None, limit=limit):
        if job.created_at < stale_before:
            due.append(job)
    return due


class _Heartbeat:
    """Renews a running job's lease (and the leases its work holds) every `interval`
    seconds while it works, so a job whose worker died is taken over within
    MEMORY_JOB_STALE_SECONDS instead of a fixed long timeout."""

    def __init__(self, store: MemoryStore, run: JobRun, *, interval: float) -> None:
        self.store, self.run, self.interval = store, run, max(interval, 0.05)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="job-heartbeat", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def _loop(self) -> None:
        oid = self.run.job.id
        while not self.stopped.wait(self.interval):
            try:
                now = utcnow()
                self.store.jobs.renew(require_object_id(oid, what="job"), now=now)
                for renew in list(self.run.renewals):
                    renew(now)
            except Exception:  # a missed beat only shortens the lease
                logger.warning("job %s: lease renewal failed", oid, exc_info=True)


def _describe(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:2000]
