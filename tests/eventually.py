"""Waiting for a write the code under test sends without awaiting its reply (w=0)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(read: Callable[[], T], *, until: Callable[[T], bool], within: float = 5.0) -> T:
    """`read()` again until `until` holds for its value, or give up after `within` seconds.

    Returns the last value read, so the caller's assertion shows what was there.
    """
    deadline = time.monotonic() + within
    value = read()
    while not until(value) and time.monotonic() < deadline:
        time.sleep(0.02)
        value = read()
    return value
