"""Ids at the boundary: the outside sees 24-hex strings, the store keeps ObjectIds."""

from __future__ import annotations

from bson import ObjectId
from bson.errors import InvalidId

from streams.core.exceptions import NotFound


def parse_object_id(value: str | None) -> ObjectId | None:
    """The ObjectId for a 24-hex string, or None for anything else (never raises)."""
    if not isinstance(value, str) or len(value) != 24:
        return None
    try:
        return ObjectId(value)
    except (InvalidId, TypeError):
        return None


def require_object_id(value: str | None, *, what: str) -> ObjectId:
    """Like `parse_object_id`, but a malformed id is simply an object that is not there."""
    oid = parse_object_id(value)
    if oid is None:
        raise NotFound(f"{what} not found")
    return oid


def new_id() -> str:
    return str(ObjectId())
