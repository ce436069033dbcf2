"""`ScreenedText`: memory text that passed the screen (`streams.guard.screening`).

The repositories that store memory text (observation content, consolidation text, pins,
session messages, the context-call log, chat-call records) take only this type and
refuse a plain `str` (`require_screened`), so no caller can store text that skipped the
screen: the guard is in the type, not in each caller. Only `streams.guard.screening`
makes one (`tests/test_one_way_in_architecture.py` holds both rules).
"""

from __future__ import annotations

from typing import Any


class ScreenedText(str):
    """A `str` whose secrets were redacted and whose flags were weighed for its scope."""

    __slots__ = ()


class UnscreenedText(TypeError):
    """A repository was handed memory text that did not pass the screen: a bug, never input."""


def require_screened(value: Any, *, what: str) -> None:
    """Refuse `value` unless it is `ScreenedText` (None passes: nothing is written)."""
    if value is not None and not isinstance(value, ScreenedText):
        raise UnscreenedText(f"{what}: memory text must pass the screen before it is stored")
