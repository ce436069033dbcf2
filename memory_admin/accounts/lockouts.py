"""Who is locked out now: the People page's read of the login throttle's attempts.

The throttle itself (django-axes' backend and its 429) is site-wide plumbing in
`memory_admin.web.login_throttle`; this read is about accounts, so the UI takes it from
here and never imports the layer above it.
"""

from __future__ import annotations

from django.conf import settings


def locked_out(usernames: list[str]) -> dict[str, int]:
    """Of these names, those locked out now: name -> the number of addresses."""
    from axes.models import AccessAttempt
    from django.utils import timezone

    since = timezone.now() - settings.AXES_COOLOFF_TIME
    counts: dict[str, int] = {}
    for name in AccessAttempt.objects.filter(
        username__in=usernames,
        failures_since_start__gte=settings.AXES_FAILURE_LIMIT,
        attempt_time__gte=since,
    ).values_list("username", flat=True):
        counts[name] = counts.get(name, 0) + 1
    return counts
