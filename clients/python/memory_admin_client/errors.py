"""The API's error envelope as exceptions: one class per status, `code` and `message` kept.

Every 4xx and 5xx the server sends is `{"error": {"code", "message", "details"}}`; the
exception carries those three as they came, so a caller can branch on `code` (e.g.
`client_id_reused`, `flagged`, `forbidden`) and show `message` to a person.
"""

from __future__ import annotations

from typing import Any


class MemoryClientError(Exception):
    """Base of everything this client raises."""


class TransportError(MemoryClientError):
    """The server could not be reached or the connection dropped, after the retries allowed."""


class APIError(MemoryClientError):
    """An answer with an error status, in the API's envelope."""

    status_code: int = 0

    def __init__(
        self,
        *,
        status_code: int,
        code: str,
        message: str,
        details: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status_code} {code}: {message}")
        self.status_code = status_code
        self.code = code
        self.message = message
        self.details = details
        self.retry_after = retry_after


class BadRequest(APIError):
    """400: the request was malformed."""


class Unauthorized(APIError):
    """401: no key, or a key that is unknown or revoked."""


class PermissionDenied(APIError):
    """403: the key lacks the permission (`read`, `write`, `forget`, `review`)."""


class NotFound(APIError):
    """404: no such object, or not one this key may see."""


class Conflict(APIError):
    """409: e.g. `client_id_reused`, a version mismatch, nothing pending."""


class PayloadTooLarge(APIError):
    """413."""


class ValidationFailed(APIError):
    """422: `details` names the fields (or the flags and spans of refused text)."""


class RateLimited(APIError):
    """429: the key's rate limit; `retry_after` is the server's `Retry-After`."""


class Unavailable(APIError):
    """503: the store (or the model) is unreachable; `retry_after` when the server said."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationFailed,
    429: RateLimited,
    503: Unavailable,
}


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` in seconds (the API sends delta-seconds); None when absent or odd."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(0.0, seconds)


def error_from_answer(*, status_code: int, body: Any, retry_after: str | None = None) -> APIError:
    """The exception for one error answer; a body outside the envelope (a proxy's page)
    still gives an exception with the status, code `http_<status>`."""
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict) and isinstance(envelope.get("code"), str):
        code = envelope["code"]
        message = str(envelope.get("message") or code)
        details = envelope.get("details")
    else:
        code, message, details = f"http_{status_code}", f"HTTP {status_code}", body
    cls = _BY_STATUS.get(status_code, APIError)
    return cls(
        status_code=status_code,
        code=code,
        message=message,
        details=details,
        retry_after=retry_after_seconds(retry_after),
    )
