"""`AsyncMemoryClient`: the asynchronous client of /api/v1 (the same operations)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import httpx2

from memory_admin_client import operations as ops
from memory_admin_client import operations_admin as admin
from memory_admin_client._base import answer, async_op, async_pages, failure, settings, timeout_of
from memory_admin_client._calls import Call, RetryPolicy
from memory_admin_client.errors import TransportError

T = TypeVar("T")


class AsyncMemoryClient:
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
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        url, sent = settings(base_url, api_key, headers)
        self.base_url = url
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx2.AsyncClient(
            base_url=url, headers=sent, timeout=timeout_of(timeout), transport=transport
        )

    async def send(self, call: Call[Any]) -> Any:
        """Send one call, retrying what the policy allows; its model, or raise."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(
                    call.method, call.path, params=call.query(), json=call.json
                )
            except httpx2.TransportError as error:
                wait = (
                    self.retry.delay(attempt, None) if self.retry.retry_error(call, error) else None
                )
                if wait is None:
                    raise TransportError(f"{call.method} {call.path}: {error!r}") from error
                await self._sleep(wait)
                continue
            if response.status_code < 400:
                return answer(call, response)
            error = failure(response)
            if self.retry.retry_status(call, response.status_code):
                wait = self.retry.delay(attempt, error.retry_after)
                if wait is not None:
                    await self._sleep(wait)
                    continue
            raise error

    async def request(self, method: str, path: str, *, json: Any = None, **params: Any) -> Any:
        """Any other endpoint: the JSON answer (not retried unless a read)."""
        call: Call[Any] = Call(
            method, path, None, params=params, json=json, idempotent=method in ("GET", "HEAD")
        )
        return await self.send(call)

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    health = async_op(ops.health)
    ingest_messages = async_op(ops.ingest_messages)
    form_session = async_op(ops.form_session)
    get_context = async_op(ops.get_context)
    search = async_op(ops.search)
    list_scopes = async_op(ops.list_scopes)
    create_group_scope = async_op(ops.create_group_scope)
    create_shard = async_op(ops.create_shard)
    get_scope = async_op(ops.get_scope)
    update_scope = async_op(ops.update_scope)
    set_pins = async_op(ops.set_pins)
    list_consolidations = async_op(ops.list_consolidations)
    consolidate = async_op(ops.consolidate)
    list_observations = async_op(ops.list_observations)
    add_observation = async_op(ops.add_observation)
    add_observations = async_op(ops.add_observations)
    get_observation = async_op(ops.get_observation)
    update_observation = async_op(ops.update_observation)
    delete_observation = async_op(ops.delete_observation)
    observation_feedback = async_op(ops.observation_feedback)
    supersede_observation = async_op(ops.supersede_observation)
    unsupersede_observation = async_op(ops.unsupersede_observation)
    observation_supersession = async_op(ops.observation_supersession)
    review_observation = async_op(ops.review_observation)
    list_review = async_op(ops.list_review)
    get_job = async_op(ops.get_job)
    list_jobs = async_op(ops.list_jobs)
    retry_job = async_op(ops.retry_job)
    forget_user = async_op(ops.forget_user)
    export_user = async_op(ops.export_user)
    list_audit = async_op(ops.list_audit)
    list_context_calls = async_op(ops.list_context_calls)

    iter_scopes = async_pages(ops.list_scopes)
    iter_consolidations = async_pages(ops.list_consolidations)
    iter_observations = async_pages(ops.list_observations)
    iter_review = async_pages(ops.list_review)
    iter_jobs = async_pages(ops.list_jobs)
    iter_audit = async_pages(ops.list_audit)
    iter_context_calls = async_pages(ops.list_context_calls)

    # operators' tooling (operations_admin)
    restore_consolidation = async_op(admin.restore_consolidation)
    observation_history = async_op(admin.observation_history)
    export_scope = async_op(admin.export_scope)
    import_export = async_op(admin.import_export)
    bulk = async_op(admin.bulk)
    review_decisions = async_op(admin.review_decisions)
    undo_review = async_op(admin.undo_review)
    list_decided = async_op(admin.list_decided)
    create_webhook = async_op(admin.create_webhook)
    list_webhooks = async_op(admin.list_webhooks)
    update_webhook = async_op(admin.update_webhook)
    delete_webhook = async_op(admin.delete_webhook)
    list_deliveries = async_op(admin.list_deliveries)
    get_agent = async_op(admin.get_agent)
    update_agent = async_op(admin.update_agent)
    lift_tombstone = async_op(admin.lift_tombstone)
    usage = async_op(admin.usage)
    retrieval_health = async_op(admin.retrieval_health)
    list_prompt_checks = async_op(admin.list_prompt_checks)
    create_prompt_check = async_op(admin.create_prompt_check)
    run_prompt_checks = async_op(admin.run_prompt_checks)
    delete_prompt_check = async_op(admin.delete_prompt_check)
    estimate_prompt_experiment = async_op(admin.estimate_prompt_experiment)
    start_prompt_experiment = async_op(admin.start_prompt_experiment)
    list_prompt_experiments = async_op(admin.list_prompt_experiments)
    get_prompt_experiment = async_op(admin.get_prompt_experiment)
    rerun_prompt_experiment = async_op(admin.rerun_prompt_experiment)
    list_corrections = async_op(admin.list_corrections)
    check_from_correction = async_op(admin.check_from_correction)
    suggest_prompt = async_op(admin.suggest_prompt)
    dry_run_prompt = async_op(admin.dry_run_prompt)
    get_agent_ranking = async_op(admin.get_agent_ranking)
    set_agent_ranking = async_op(admin.set_agent_ranking)
    get_scope_ranking = async_op(admin.get_scope_ranking)
    set_scope_ranking = async_op(admin.set_scope_ranking)
    unused_memory = async_op(admin.unused_memory)
    undo_bulk = async_op(admin.undo_bulk)
    consolidation_estimate = async_op(admin.consolidation_estimate)
    get_questions = async_op(admin.get_questions)
    set_questions = async_op(admin.set_questions)
    iter_webhooks = async_pages(admin.list_webhooks)
    iter_deliveries = async_pages(admin.list_deliveries)
