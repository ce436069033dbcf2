"""What the sync and async clients share: configuration, the answer's parsing, and the
turning of each builder in `operations` into a typed method."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx2
from pydantic import BaseModel

from memory_admin_client._calls import Call
from memory_admin_client._version import __version__
from memory_admin_client.errors import APIError, error_from_answer
from memory_admin_client.models import Page

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 10.0


def settings(
    base_url: str | None, api_key: str | None, headers: dict[str, str] | None
) -> tuple[str, dict[str, str]]:
    """The base URL and headers: arguments first, then MEMORY_API_URL / MEMORY_API_KEY."""
    url = (base_url or os.environ.get("MEMORY_API_URL") or DEFAULT_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("MEMORY_API_KEY")
    sent = {"User-Agent": f"memory-admin-client/{__version__}", "Accept": "application/json"}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    sent.update(headers or {})
    return url, sent


def timeout_of(timeout: float | httpx2.Timeout | None) -> httpx2.Timeout:
    if isinstance(timeout, httpx2.Timeout):
        return timeout
    return httpx2.Timeout(DEFAULT_TIMEOUT if timeout is None else timeout)


def answer(call: Call[Any], response: httpx2.Response) -> Any:
    """The model of a success (the plain JSON for a call without one), None for 204."""
    if response.status_code == 204 or not response.content:
        return None
    body = response.json()
    return body if call.model is None else call.model.model_validate(body)


def failure(response: httpx2.Response) -> APIError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return error_from_answer(
        status_code=response.status_code,
        body=body,
        retry_after=response.headers.get("Retry-After"),
    )


def sync_op(builder: Callable[P, Call[T]]) -> Callable[Concatenate[Any, P], T]:
    """A client method that builds the call and sends it (`MemoryClient.send`)."""

    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(builder(*args, **kwargs))

    method.__name__, method.__doc__ = builder.__name__, builder.__doc__
    return method


def async_op(builder: Callable[P, Call[T]]) -> Callable[Concatenate[Any, P], Awaitable[T]]:
    async def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(builder(*args, **kwargs))

    method.__name__, method.__doc__ = builder.__name__, builder.__doc__
    return method


def sync_pages(builder: Callable[P, Call[Page[M]]]) -> Callable[Concatenate[Any, P], Iterator[M]]:
    """Every item of a paginated list, following `next_cursor` page by page."""

    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> Iterator[M]:
        call = builder(*args, **kwargs)
        while True:
            page = self.send(call)
            yield from page.items
            if not page.next_cursor:
                return
            call = call.with_cursor(page.next_cursor)

    method.__name__ = "iter_" + builder.__name__.removeprefix("list_")
    return method


def async_pages(
    builder: Callable[P, Call[Page[M]]],
) -> Callable[Concatenate[Any, P], AsyncIterator[M]]:
    async def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[M]:
        call = builder(*args, **kwargs)
        while True:
            page = await self.send(call)
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            call = call.with_cursor(page.next_cursor)

    method.__name__ = "iter_" + builder.__name__.removeprefix("list_")
    return method
