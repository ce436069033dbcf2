"""The pieces every resource's schemas share: ids, times, the input base, pages, errors."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    StringConstraints,
)

from streams.core.pagination import CURSOR_DESCRIPTION, CURSOR_PATTERN, DEFAULT_LIMIT, MAX_LIMIT
from streams.core.times import RANGE_TEXT, in_range

# External ids (agent, user, group, session, message): strings of 1..128 characters.
ExternalId = Annotated[str, StringConstraints(min_length=1, max_length=128)]
# Text the domain strips must hold something besides whitespace; the schema says so.
NOT_BLANK = r"\S"
DisplayName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=NOT_BLANK)
]
Prompt = Annotated[str, StringConstraints(max_length=20_000)]
MAX_MESSAGES = 500  # per ingest request
MAX_VERSION = 2**53  # version numbers: far beyond any real history, well inside BSON int64
MAX_GROUPS = 100


def iso_utc(value: datetime) -> str:
    """UTC with milliseconds and a `Z`: what the store keeps, so a created object and
    the same object read back are byte-for-byte equal."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# Output times: ISO 8601 in UTC, millisecond precision (MongoDB's own).
Time = Annotated[datetime, PlainSerializer(iso_utc, return_type=str)]

_ISO_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([Zz]|[+-]\d{2}:?\d{2})$"
)


def _iso_text(value: Any) -> Any:
    """Times come as ISO 8601 text with a zone, as the OpenAPI says (`format: date-time`);
    pydantic alone would also take numbers and digit strings as Unix times."""
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_TIME.match(value)):
        return value
    raise ValueError("must be an ISO 8601 date-time with a timezone, e.g. 2024-05-01T12:00:00Z")


def _in_utc(value: datetime) -> datetime:
    """Shifted to UTC here and held to the supported range (`streams.core.times`), so a
    time past it (`2106-02-08`, or a zone shift past year 9999) is a 422 naming the
    field, never an overflow later."""
    try:
        shifted = value.astimezone(UTC)
    except OverflowError:
        shifted = None
    if shifted is None or not in_range(shifted):
        raise ValueError(f"must fall within {RANGE_TEXT} once shifted to UTC")
    return shifted


# Input times: ISO 8601 date-times with a timezone, nothing else; handed on in UTC.
IsoTime = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(_in_utc)]


class InSchema(Schema):
    """Base of every input: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


# -- errors ------------------------------------------------------------------------------


class ErrorBody(Schema):
    code: str = Field(..., examples=["not_found"])
    message: str
    details: Any = None


class ErrorOut(Schema):
    error: ErrorBody


# -- lists -------------------------------------------------------------------------------


class PageQuery(Schema):
    """`?limit=&cursor=` of every list; a cursor is opaque and only ever passed back."""

    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(
        None, max_length=512, pattern=CURSOR_PATTERN, description=CURSOR_DESCRIPTION
    )


def error_responses(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error statuses an operation declares, for the OpenAPI document."""
    return dict.fromkeys(statuses, ErrorOut)
