"""System checks (`manage.py check`, and at every start) for settings that look wrong."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.core.checks import Warning, register

BASE_URL_SETTINGS = ("MEMORY_CHAT_UPSTREAM_BASE_URL", "OPENAI_BASE_URL")


@register()
def base_urls_include_the_api_path(**_: Any) -> list[Warning]:
    """An OpenAI-compatible base URL includes the API's version path, as the `openai`
    SDK's `base_url` does (`https://api.openai.com/v1`, `http://localhost:11434/v1`):
    requests go to `<base>/chat/completions`. A bare host is almost always a missing `/v1`
    (the upstream then answers 404 to every chat call)."""
    warnings = []
    for name in BASE_URL_SETTINGS:
        value = getattr(settings, name, None)
        if not value:
            continue
        parsed = urlparse(value)
        if parsed.scheme in ("http", "https") and parsed.path.strip("/") == "":
            warnings.append(
                Warning(
                    f"{name}={value} has no path: requests would go to "
                    f"{value.rstrip('/')}/chat/completions.",
                    hint=f"Include the API path, as the openai SDK's base_url does: "
                    f"{value.rstrip('/')}/v1",
                    id="memory_admin.W001",
                )
            )
    return warnings
