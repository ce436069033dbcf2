"""Ids at the boundary: the outside sees 24-hex strings, the store keeps ObjectIds."""

from __future__ import annotations

import hashlib
import secrets
import struct
import threading
import time

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


class _UnguessableIds:
    """ObjectIds whose last 8 bytes step by a random amount (a process-wide random start,
    then 1..2**32 more each time) instead of bson's process id and +1 counter.

    They still sort in the order they were made (lists page by `_id`, newest first) and
    carry their second (time windows are `_id` windows), but one id says next to
    nothing about the ids made before or after it: an agent's own ids do not lead to
    another agent's (issue 44)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tail = secrets.randbits(62)

    def next(self) -> ObjectId:
        with self.lock:
            self.tail = (self.tail + 1 + secrets.randbits(32)) % 2**64
            tail = self.tail
        return ObjectId(struct.pack(">I", int(time.time())) + tail.to_bytes(8, "big"))


_IDS = _UnguessableIds()


def new_object_id() -> ObjectId:
    """A fresh id for a scope, observation or other object the API names (see above)."""
    return _IDS.next()


def new_id() -> str:
    return str(new_object_id())


def foreign_id(*, agent_id: str, original: str) -> str:
    """Where an import keeps an item whose id another agent's object holds: the same
    second, a tail derived from the agent and the id (so importing the document again
    finds it), and nothing that tells the importer the id was taken."""
    digest = hashlib.sha256(f"{agent_id}\x00{original}".encode()).digest()
    return str(ObjectId(bytes.fromhex(original)[:4] + digest[:8]))
