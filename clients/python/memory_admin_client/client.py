"""`MemoryClient`: the synchronous client of /api/v1."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import httpx2

from memory_admin_client import operations as ops
from memory_admin_client import operations_admin as admin
from memory_admin_client._base import answer, failure, settings, sync_op, sync_pages, timeout_of
from memory_admin_client._calls import Call, RetryPolicy
from memory_admin_client.errors import TransportError

T = TypeVar("T")


class MemoryClient:
    """One key's view of the API. Errors raise `APIError` subclasses (the envelope's
    `code`, `message`, `details`); retries follow `retry` (see `RetryPolicy`).

    `transport` and `sleep` are seams: an httpx2 transport (a proxy, a test's fault) and
    how a wait is spent."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx2.Timeout | None = None,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx2.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        url, sent = settings(base_url, api_key, headers)
        self.base_url = url
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx2.Client(
            base_url=url, headers=sent, timeout=timeout_of(timeout), transport=transport
        )

    def send(self, call: Call[Any]) -> Any:
        """Send one call, retrying what the policy allows; its model, or raise."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(
                    call.method, call.path, params=call.query(), json=call.json
                )
            except httpx2.TransportError as error:
                wait = (
                    self.retry.delay(attempt, None) if self.retry.retry_error(call, error) else None
                )
                if wait is None:
                    raise TransportError(f"{call.method} {call.path}: {error!r}") from error
                self._sleep(wait)
                continue
            if response.status_code < 400:
                return answer(call, response)
            error = failure(response)
            if self.retry.retry_status(call, response.status_code):
                wait = self.retry.delay(attempt, error.retry_after)
                if wait is not None:
                    self._sleep(wait)
                    continue
            raise error

    def request(self, method: str, path: str, *, json: Any = None, **params: Any) -> Any:
        """Any other endpoint: the JSON answer (not retried unless a read)."""
        call: Call[Any] = Call(
            method, path, None, params=params, json=json, idempotent=method in ("GET", "HEAD")
        )
        return self.send(call)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    health = sync_op(ops.health)
    ingest_messages = sync_op(ops.ingest_messages)
    form_session = sync_op(ops.form_session)
    get_context = sync_op(ops.get_context)
    search = sync_op(ops.search)
    list_scopes = sync_op(ops.list_scopes)
    create_group_scope = sync_op(ops.create_group_scope)
    create_shard = sync_op(ops.create_shard)
    get_scope = sync_op(ops.get_scope)
    update_scope = sync_op(ops.update_scope)
    set_pins = sync_op(ops.set_pins)
    list_consolidations = sync_op(ops.list_consolidations)
    consolidate = sync_op(ops.consolidate)
    list_observations = sync_op(ops.list_observations)
    add_observation = sync_op(ops.add_observation)
    add_observations = sync_op(ops.add_observations)
    get_observation = sync_op(ops.get_observation)
    update_observation = sync_op(ops.update_observation)
    delete_observation = sync_op(ops.delete_observation)
    observation_feedback = sync_op(ops.observation_feedback)
    supersede_observation = sync_op(ops.supersede_observation)
    unsupersede_observation = sync_op(ops.unsupersede_observation)
    observation_supersession = sync_op(ops.observation_supersession)
    review_observation = sync_op(ops.review_observation)
    list_review = sync_op(ops.list_review)
    get_job = sync_op(ops.get_job)
    list_jobs = sync_op(ops.list_jobs)
    retry_job = sync_op(ops.retry_job)
    forget_user = sync_op(ops.forget_user)
    export_user = sync_op(ops.export_user)
    list_audit = sync_op(ops.list_audit)
    list_context_calls = sync_op(ops.list_context_calls)

    iter_scopes = sync_pages(ops.list_scopes)
    iter_consolidations = sync_pages(ops.list_consolidations)
    iter_observations = sync_pages(ops.list_observations)
    iter_review = sync_pages(ops.list_review)
    iter_jobs = sync_pages(ops.list_jobs)
    iter_audit = sync_pages(ops.list_audit)
    iter_context_calls = sync_pages(ops.list_context_calls)

    # operators' tooling (operations_admin)
    restore_consolidation = sync_op(admin.restore_consolidation)
    observation_history = sync_op(admin.observation_history)
    export_scope = sync_op(admin.export_scope)
    import_export = sync_op(admin.import_export)
    bulk = sync_op(admin.bulk)
    review_decisions = sync_op(admin.review_decisions)
    undo_review = sync_op(admin.undo_review)
    list_decided = sync_op(admin.list_decided)
    create_webhook = sync_op(admin.create_webhook)
    list_webhooks = sync_op(admin.list_webhooks)
    update_webhook = sync_op(admin.update_webhook)
    delete_webhook = sync_op(admin.delete_webhook)
    list_deliveries = sync_op(admin.list_deliveries)
    get_agent = sync_op(admin.get_agent)
    update_agent = sync_op(admin.update_agent)
    lift_tombstone = sync_op(admin.lift_tombstone)
    usage = sync_op(admin.usage)
    retrieval_health = sync_op(admin.retrieval_health)
    list_prompt_checks = sync_op(admin.list_prompt_checks)
    create_prompt_check = sync_op(admin.create_prompt_check)
    run_prompt_checks = sync_op(admin.run_prompt_checks)
    delete_prompt_check = sync_op(admin.delete_prompt_check)
    estimate_prompt_experiment = sync_op(admin.estimate_prompt_experiment)
    start_prompt_experiment = sync_op(admin.start_prompt_experiment)
    list_prompt_experiments = sync_op(admin.list_prompt_experiments)
    get_prompt_experiment = sync_op(admin.get_prompt_experiment)
    rerun_prompt_experiment = sync_op(admin.rerun_prompt_experiment)
    list_corrections = sync_op(admin.list_corrections)
    check_from_correction = sync_op(admin.check_from_correction)
    suggest_prompt = sync_op(admin.suggest_prompt)
    dry_run_prompt = sync_op(admin.dry_run_prompt)
    get_agent_ranking = sync_op(admin.get_agent_ranking)
    set_agent_ranking = sync_op(admin.set_agent_ranking)
    get_scope_ranking = sync_op(admin.get_scope_ranking)
    set_scope_ranking = sync_op(admin.set_scope_ranking)
    unused_memory = sync_op(admin.unused_memory)
    undo_bulk = sync_op(admin.undo_bulk)
    consolidation_estimate = sync_op(admin.consolidation_estimate)
    get_questions = sync_op(admin.get_questions)
    set_questions = sync_op(admin.set_questions)
    iter_webhooks = sync_pages(admin.list_webhooks)
    iter_deliveries = sync_pages(admin.list_deliveries)
