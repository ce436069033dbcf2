"""A store that cannot be reached answers 503 (the UI's page, the API's envelope), never 500."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.loader import render_to_string

from memory_admin.api.errors import store_unavailable_response
from memory_admin.api.middleware import is_api_request
from memory_admin.stores import store_unreachable
from streams.core.exceptions import Busy

logger = logging.getLogger("memory_admin.store")


class StoreUnavailableMiddleware:
    """Turns a store connection failure raised by a view into a clear 503 with Retry-After."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Busy) and not is_api_request(request):
            # A page's write met a transaction a killed worker left open (the API answers
            # its envelope through its own handler).
            body = render_to_string(
                "store_busy.html", {"retry_after": exception.retry_after}, request=request
            )
            response = HttpResponse(body, status=503)
            response["Retry-After"] = str(exception.retry_after)
            return response
        if not store_unreachable(exception):
            return None
        logger.warning("store unreachable: %s %s: %s", request.method, request.path, exception)
        if is_api_request(request):
            return store_unavailable_response()
        retry_after = settings.MEMORY_STORE_RETRY_AFTER_SECONDS
        body = render_to_string(
            "store_unavailable.html", {"retry_after": retry_after}, request=request
        )
        response = HttpResponse(body, status=503)
        response["Retry-After"] = str(retry_after)
        return response
