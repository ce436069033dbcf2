"""Run a coroutine to its end from a test, whatever loop the thread already has.

The browser tests drive Playwright's sync API, which leaves an event loop running in the
main thread for the rest of the session; `asyncio.run` refuses to start inside it, so a
coroutine runs on a thread of its own (with its own loop) instead."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
