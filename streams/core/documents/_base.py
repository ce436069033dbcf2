"""What the documents share: their literal types, limits, the clock and the id
converters (the only place where ObjectIds and strings meet)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from bson import ObjectId

ScopeType = Literal["individual", "group", "collective"]
ReviewMode = Literal["off", "propagated", "all"]
REVIEW_MODES: tuple[str, ...] = ("off", "propagated", "all")
ReviewStatus = Literal["in_review", "candidate", "rejected"]
ObservationStatus = Literal["pending", "consolidated", "in_review", "candidate", "rejected"]
SCOPE_TYPES: tuple[ScopeType, ...] = ("individual", "group", "collective")
JobStatus = Literal["queued", "running", "succeeded", "failed"]


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_CONTENT_CHARS = 4000  # an observation's text, as stored


def utcnow() -> datetime:
    """Now in UTC, to the millisecond: what MongoDB stores, so a read-back compares equal."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _oid(value: str | None) -> ObjectId | None:
    return ObjectId(value) if value else None


def _str(value: ObjectId | None) -> str | None:
    return str(value) if value is not None else None
