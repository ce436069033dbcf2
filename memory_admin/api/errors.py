"""The one error envelope of the API, and the exception handlers that produce it.

Every error an agent sees, whatever raised it (the domain, ninja's validation,
authentication, a bug), has the shape `{"error": {"code", "message",
"details"}}` of `shared/spec/api.md`, so clients branch on one stable `code`
instead of parsing Django's or ninja's defaults. Handlers raise the
application's exceptions; this module alone turns them into responses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from memory_admin.api.auth import PermissionDenied
from memory_admin.api.ratelimit import RateLimited
from memory_admin.runtime.connection import close_connection
from memory_admin.stores import store_unreachable
from streams.core.exceptions import (
    Busy,
    Conflict,
    InvalidInput,
    MemoryServiceError,
    NotFound,
    Refused,
    Unavailable,
)

logger = logging.getLogger("memory_admin.api")

# Statuses the API uses, with the code a client can branch on; others fall back to the
# snake_cased HTTP phrase.
STATUS_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}

DOMAIN_STATUSES: dict[type[MemoryServiceError], int] = {
    NotFound: 404,
    PermissionDenied: 403,
    Conflict: 409,
    Refused: 409,
    InvalidInput: 422,
    Unavailable: 503,
    RateLimited: 429,
}


# Tags of discriminated-union bodies: pydantic puts the tag in an error's location
# ("group.group_id"), but the caller wrote only "group_id".
_UNION_TAGS: set[str] = set()


def register_union_tags(*tags: str) -> None:
    """Declare the tag values of a discriminated-union body (see `field_details`)."""
    _UNION_TAGS.update(tags)


class MalformedJson(ValueError):
    """A request body that is not strict UTF-8 JSON; raised by the API's parser."""


def code_for_status(status: int) -> str:
    if status in STATUS_CODES:
        return STATUS_CODES[status]
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


def message_for_status(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def error_response(
    status: int, *, code: str | None = None, message: str | None = None, details: Any = None
) -> HttpResponse:
    """The envelope as a JSON response; the one place that decides its shape."""
    body = {
        "error": {
            "code": code or code_for_status(status),
            "message": message or message_for_status(status),
            "details": details,
        }
    }
    return JsonResponse(body, status=status)


def field_details(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    """ninja's validation errors as `{"field": "a.b", "message"}`, the field path as sent.

    ninja prefixes each location with its source (`body`, `query`, `path`) and, for
    bodies, the handler's parameter name (and pydantic a union's tag); none of them
    is something the caller wrote.
    """
    details = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        if loc and loc[0] == "body":
            loc = loc[2:]
            if len(loc) > 1 and loc[0] in _UNION_TAGS:
                loc = loc[1:]
        elif loc and loc[0] in {"query", "path", "header", "cookie", "form"}:
            loc = loc[1:]
        if error.get("type") in {"union_tag_invalid", "union_tag_not_found"}:
            # A missing or unknown tag is about the tag field, not the whole body.
            loc = [*loc, str(error.get("ctx", {}).get("discriminator", "")).strip("'")]
        details.append(
            {"field": ".".join(p for p in loc if p) or "body", "message": str(error.get("msg", ""))}
        )
    return details


def domain_details(exc: MemoryServiceError) -> Any:
    """The domain's details, with each field entry carrying a message like ninja's do."""
    if isinstance(exc.details, list):
        return [
            {**item, "message": item.get("message", exc.message)}
            if isinstance(item, dict)
            else item
            for item in exc.details
        ]
    return exc.details


def _on_domain_error(request: HttpRequest, exc: MemoryServiceError) -> HttpResponse:
    status = next(
        (s for cls, s in DOMAIN_STATUSES.items() if isinstance(exc, cls)),
        400,
    )
    if status == 503:
        logger.warning("unavailable: %s %s: %s", request.method, request.path, exc.message)
        store_unreachable(exc)  # an embedded store that died is restarted meanwhile
        response = with_retry_after(
            error_response(status, code=exc.code, message=exc.message, details=domain_details(exc))
        )
        if isinstance(exc, Busy):
            response["Retry-After"] = str(exc.retry_after)
        return response
    response = error_response(
        status, code=exc.code, message=exc.message, details=domain_details(exc)
    )
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


def store_unavailable_response() -> HttpResponse:
    """503 for a store that cannot be reached: the client retries after a short wait."""
    return with_retry_after(
        error_response(
            503,
            code="unavailable",
            message="the memory store is unreachable; retry shortly",
        )
    )


def with_retry_after(response: HttpResponse) -> HttpResponse:
    response["Retry-After"] = str(settings.MEMORY_STORE_RETRY_AFTER_SECONDS)
    return response


def _on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return error_response(
        422,
        code="validation_error",
        message="the request is not valid",
        details=field_details(exc.errors),
    )


def _on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error_response(
        401,
        code="unauthorized",
        message="a valid API key is required: Authorization: Bearer <key>",
    )
    response["WWW-Authenticate"] = "Bearer"
    return response


def _on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, RequestDataTooBig):
        close_connection(request)  # the rest of the body stays unread
        return payload_too_large_response()
    if isinstance(exc.__cause__, MalformedJson):
        return error_response(400, code="malformed_json", message=str(exc.__cause__))
    if exc.status_code == 400 and exc.__cause__ is not None:
        # ninja wraps any failure of the parser this way.
        return error_response(400, code="malformed_json", message="the body is not valid JSON")
    return error_response(exc.status_code, message=exc.message)


def _on_http404(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(404, message="not found")


def _on_request_data_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    close_connection(request)
    return payload_too_large_response()


def _on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    if store_unreachable(exc):
        logger.warning("store unreachable: %s %s: %s", request.method, request.path, exc)
        return store_unavailable_response()
    # The trace goes to the log, never to the caller.
    logger.exception("unhandled error in %s %s", request.method, request.path, exc_info=exc)
    return error_response(500, code="internal_error", message="an internal error occurred")


def payload_too_large_response() -> HttpResponse:
    limit = settings.API_MAX_BODY_BYTES
    return error_response(
        413,
        code="payload_too_large",
        message=f"the request body is larger than {limit} bytes",
        details={"max_bytes": limit},
    )


def install_exception_handlers(api: NinjaAPI) -> None:
    """Replace ninja's defaults (`{"detail": ...}`, tracebacks in DEBUG) with the envelope."""
    _add_handler(api, MemoryServiceError, _on_domain_error)
    _add_handler(api, ValidationError, _on_validation_error)
    _add_handler(api, AuthenticationError, _on_authentication_error)
    _add_handler(api, HttpError, _on_http_error)
    _add_handler(api, Http404, _on_http404)
    _add_handler(api, RequestDataTooBig, _on_request_data_too_big)
    _add_handler(api, Exception, _on_unexpected)


_E = TypeVar("_E", bound=Exception)


def _add_handler(
    api: NinjaAPI, exc_class: type[_E], handler: Callable[[HttpRequest, _E], HttpResponse]
) -> None:
    # ninja annotates a handler as taking the exception or its class (`Exc[_E]`); it is
    # only ever called with the instance (NinjaAPI.on_exception).
    api.add_exception_handler(exc_class, handler)  # type: ignore[arg-type]
