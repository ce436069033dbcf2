"""Cursor pages shared by the API and the UI: opaque cursors, a bounded limit."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streams.exceptions import InvalidInput

T = TypeVar("T")

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(position: dict[str, Any]) -> str:
    raw = json.dumps(position, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, *, required_keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The position a cursor names, or None for the first page; a forged cursor is invalid input."""
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        position = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error) as exc:
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}]) from exc
    if not isinstance(position, dict) or any(
        not isinstance(position.get(k), int | str) for k in required_keys
    ):
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    return position


def clamp_limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    if limit < 1 or limit > MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", details=[{"field": "limit"}])
    return limit


def seq_cursor(next_before: int | None) -> str | None:
    return encode_cursor({"before": next_before}) if next_before is not None else None


def seq_before(cursor: str | None) -> int | None:
    position = decode_cursor(cursor, required_keys=("before",))
    if position is None:
        return None
    before = position["before"]
    if not isinstance(before, int) or before < 1:
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    return before
