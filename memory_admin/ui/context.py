from __future__ import annotations


def navigation(request):
    return {}
