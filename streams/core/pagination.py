"""Cursor pages shared by the API and the UI: opaque cursors, a bounded limit."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streams.core.exceptions import InvalidInput

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


# A cursor is base64url (no padding) of canonical JSON: one object whose values are
# positive integers (a sequence or version number) or 24-hex ObjectId strings.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,512}$"
CURSOR_DESCRIPTION = (
    "Opaque: pass back the `next_cursor` of the previous page unchanged. "
    "Base64url characters only; anything not handed out by the server is refused (422)."
)
MAX_CURSOR_INT = 2**53  # larger than any sequence or version number the store hands out
_CURSOR_RE = re.compile(CURSOR_PATTERN)
_OBJECT_ID_RE = re.compile(r"^[0-9a-f]{24}$")


def decode_cursor(cursor: str | None, *, required_keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The position a cursor names, or None for the first page; anything else is invalid input.

    Strict on purpose: the cursor must be exactly what `encode_cursor` makes for these
    keys, with bounded values, so a crafted one cannot reach the store as an odd type or
    an integer BSON cannot hold.
    """
    if not cursor:
        return None
    if not _CURSOR_RE.match(cursor):
        raise _malformed()
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        position = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error, RecursionError) as exc:
        raise _malformed() from exc
    if (
        not isinstance(position, dict)
        or sorted(position) != sorted(required_keys)
        or not all(_cursor_value(v) for v in position.values())
        or encode_cursor(position) != cursor
    ):
        raise _malformed()
    return position


def _cursor_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 1 <= value <= MAX_CURSOR_INT
    return isinstance(value, str) and bool(_OBJECT_ID_RE.match(value))


def _malformed() -> InvalidInput:
    return InvalidInput("malformed cursor", details=[{"field": "cursor"}])


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
