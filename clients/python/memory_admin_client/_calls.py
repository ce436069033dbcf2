"""One description of each request (`Call`), shared by the sync and the async client,
and the retry rule both apply: which failures may be sent again and after how long."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx2
from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Call(Generic[T]):
    """A request and the model of its answer. `idempotent`: sending it twice leaves the
    same state as once (reads, PUT/PATCH/DELETE, adds carrying a `client_id`, ingest of
    messages with ids), so a dropped connection may be retried."""

    method: str
    path: str
    model: type[T] | None
    params: dict[str, Any] | None = None
    json: Any = None
    idempotent: bool = False

    def query(self) -> dict[str, Any] | None:
        if not self.params:
            return None
        return {k: _param(v) for k, v in self.params.items() if v is not None}

    def with_cursor(self, cursor: str) -> Call[T]:
        return dataclasses.replace(self, params={**(self.params or {}), "cursor": cursor})


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


# Nothing reached the server: safe to send again whatever the request.
NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
# The request may have been processed: only an idempotent one is sent again.
MAYBE_SENT = (httpx2.TransportError,)


@dataclass(frozen=True)
class RetryPolicy:
    """At most `attempts` sends. A 429 is always retried after its `Retry-After` (the
    server refused before doing anything); a 502/503/504 and a dropped connection only
    for idempotent calls. `max_retry_after` caps how long one wait may be: a longer
    `Retry-After` is raised to the caller instead of slept through."""

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 120.0
    retry_statuses: frozenset[int] = field(default=frozenset({429, 502, 503, 504}))

    def retry_status(self, call: Call[Any], status: int) -> bool:
        if status not in self.retry_statuses:
            return False
        return status == 429 or call.idempotent

    def retry_error(self, call: Call[Any], error: Exception) -> bool:
        if isinstance(error, NOT_SENT):
            return True
        return isinstance(error, MAYBE_SENT) and call.idempotent

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before send number `attempt + 1`; None: do not retry."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        base = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return base * (0.5 + random.random() / 2)


NO_RETRY = RetryPolicy(attempts=1)
