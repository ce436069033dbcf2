"""Middleware that keeps everything under `/api/` JSON: the envelope, 413s, and no login redirect.

ninja's exception handlers shape the errors of its own operations. What happens
before or around them (an unknown URL, a wrong method, a body too large to
read, a crash outside ninja) is Django's, which answers in HTML; this
middleware rewrites those answers into the same envelope, with the same status.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from memory_admin.api.errors import error_response, payload_too_large_response
from memory_admin.runtime.connection import close_connection

logger = logging.getLogger("memory_admin.api")

API_PREFIX = "/api/"


def is_api_request(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


class ApiErrorEnvelopeMiddleware:
    """For `/api/` paths: refuse oversized bodies early, and envelope every non-JSON error."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not is_api_request(request):
            return self.get_response(request)
        refusal = self._check_body_size(request)
        if refusal is not None:
            close_connection(request)  # the body stays unread: this answer is the last
            return refusal
        response = self.get_response(request)
        # The chat proxy relays upstream errors in OpenAI's shape on purpose (api.md).
        relayed = getattr(response, "relays_upstream_error", False)
        if response.status_code >= 400 and not relayed and not _is_envelope(response):
            return self._envelope(request, response)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """Django views under /api/ (not ninja's, which handle their own) that read a huge body."""
        if is_api_request(request) and isinstance(exception, RequestDataTooBig):
            close_connection(request)
            return payload_too_large_response()
        return None

    def _check_body_size(self, request: HttpRequest) -> HttpResponse | None:
        raw = request.META.get("CONTENT_LENGTH") or ""
        if not raw.strip():
            return None
        try:
            length = int(raw)
        except ValueError:
            return error_response(400, message="the Content-Length header is not a number")
        if length < 0:
            return error_response(400, message="the Content-Length header is negative")
        if length > settings.API_MAX_BODY_BYTES:
            return payload_too_large_response()
        return None

    def _envelope(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponse:
        status = response.status_code
        details: object = None
        message = None
        if status == 404:
            message = f"no API endpoint at {request.path}"
        elif status == 405:
            allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip()]
            message = f"method {request.method} is not allowed here"
            details = {"allowed": allowed}
        elif status >= 500:
            logger.error(
                "%s %s answered %s outside the API's handlers", request.method, request.path, status
            )
        elif _is_json(response):
            details = _json_body(response)
        enveloped = error_response(status, message=message, details=details)
        if response.has_header("Allow"):
            enveloped["Allow"] = response["Allow"]
        if response.has_header("WWW-Authenticate"):
            enveloped["WWW-Authenticate"] = response["WWW-Authenticate"]
        return enveloped


class ApiExemptLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Django's login requirement for the UI; the API authenticates with keys, never redirects."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponseBase],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if is_api_request(request):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def _is_json(response: HttpResponseBase) -> bool:
    return response.get("Content-Type", "").split(";")[0].strip() == "application/json"


def _json_body(response: HttpResponseBase) -> object:
    if getattr(response, "streaming", False):
        return None
    try:
        return json.loads(response.content)  # type: ignore[attr-defined]
    except (ValueError, UnicodeDecodeError):
        return None


def _is_envelope(response: HttpResponseBase) -> bool:
    if not _is_json(response):
        return False
    body = _json_body(response)
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and isinstance(error.get("code"), str)
