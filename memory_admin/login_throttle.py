"""The sign-in throttle's backend: django-axes' check, for sign-ins over HTTP only.

`authenticate()` without a request (management commands, a shell, tests that check a
password) has no client to count failures for: it is let through to the next backend
instead of failing as django-axes' own backend does.
"""

from __future__ import annotations

from datetime import timedelta
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
