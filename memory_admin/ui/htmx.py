"""The two htmx request facts our views branch on, without a django-htmx dependency."""

from __future__ import annotations

from collections.abc import Mapping

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def wants_partial(request: HttpRequest) -> bool:
    """True for an htmx swap; False for full pages, including htmx's history restore.

    On a history cache miss htmx re-requests the URL with `HX-History-Restore-Request`
    and swaps the whole body, so that request must get the full page.
    """
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def render_page(
    request: HttpRequest, *, page: str, partial: str, context: Mapping[str, object]
) -> HttpResponse:
    """The page template, or only its partial for an htmx swap.

    `Vary: HX-Request` keeps a browser cache from serving one in place of the other.
    """
    template = partial if wants_partial(request) else page
    response = render(request, template, context)
    patch_vary_headers(response, ("HX-Request",))
    return response
