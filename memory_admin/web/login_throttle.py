"""The sign-in throttle's backend: django-axes' check, for sign-ins over HTTP only.

`authenticate()` without a request (management commands, a shell, tests that check a
password) has no client to count failures for: it is let through to the next backend
instead of failing as django-axes' own backend does.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from functools import cache
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render


class LoginThrottleBackend(AxesStandaloneBackend):
    def authenticate(self, request: Any = None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _trusted(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().split("%")[0])
    except ValueError:
        return None


def client_ip(request: Any) -> str | None:
    """The address failures are counted for: the peer, or behind a trusted proxy the
    last X-Forwarded-For entry that is not one (nginx's `$proxy_add_x_forwarded_for`
    appends the peer it saw; what the client wrote itself comes before and is not
    believed)."""
    peer = request.META.get("REMOTE_ADDR")
    trusted = _trusted(tuple(settings.MEMORY_TRUSTED_PROXIES))

    def is_proxy(address: Any) -> bool:
        return address is not None and any(address in net for net in trusted)

    if not is_proxy(_address(peer or "")):
        return peer
    hops = [h for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return peer  # a malformed chain: counted as the proxy itself
        if not is_proxy(address):
            return str(address)
    return peer


def lockout_response(request: Any, original_response: Any, credentials: Any) -> HttpResponse:
    """429 with the sign-in page's look, how long the lockout lasts, and Retry-After."""
    cool_off: timedelta = settings.AXES_COOLOFF_TIME
    minutes = max(1, round(cool_off.total_seconds() / 60))
    response = render(
        request,
        "registration/locked_out.html",
        {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes},
        status=429,
    )
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
