"""The application's one exception family: interfaces map each `code` to a status."""

from __future__ import annotations

from typing import Any


class MemoryServiceError(Exception):
    """Base of every error the domain raises on purpose; `code` is snake_case and stable."""

    code = "error"

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class NotFound(MemoryServiceError):
    code = "not_found"


class Conflict(MemoryServiceError):
    code = "conflict"


class Refused(MemoryServiceError):
    """A write the domain refuses for good (409): unlike `Conflict`, retrying it changes
    nothing, so a transaction that meets it is not tried again."""

    code = "refused"


class InvalidInput(MemoryServiceError):
    """Input that passed the schema but breaks a domain rule."""

    code = "validation_error"


class Unavailable(MemoryServiceError):
    """The store or the LLM cannot be reached; the caller may retry later."""

    code = "unavailable"


class Busy(Unavailable):
    """A write kept conflicting with another transaction for the store's conflict window
    (e.g. one a killed worker left open, until the store reaps it): retry after
    `retry_after` seconds. Answered 503 with Retry-After, never a 500."""

    code = "busy"

    def __init__(self, message: str, *, retry_after: int, details: Any = None) -> None:
        super().__init__(message, details=details)
        self.retry_after = retry_after


class IndexesMissing(Unavailable):
    """The store's indexes could not be created: writes would break their guarantees
    (idempotent ingest rests on unique indexes), so the store is not used until they are."""

    code = "indexes_missing"
