"""`labelled`: a job's result (or any JSON-like dict) as (label, text) rows for a `<dl>`.

Job results are free-form dicts written by each task; printing them raw showed Python
reprs (`{'version': 3, ...}`). This turns keys into words and values into short text.
"""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django import template

register = template.Library()

ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$")
MAX_ITEMS = 8
MAX_CHARS = 300
LABELS = {
    "absorbed": "Observations absorbed",
    "version": "New version",
    "note": "Note",
    "created": "Observations created",
    "tokens_in": "Tokens in",
    "tokens_out": "Tokens out",
    "model": "Model",
    "prompt_version": "Prompt version",
    # A forget_user receipt: versions of group and collective memories that held the
    # user's text; the individual memory's own versions are deleted (memory_consolidations).
    "redacted_versions": "Group and collective versions redacted",
}


@register.filter
def labelled(result: dict[str, Any] | None) -> list[tuple[str, str]]:
    return [(label_of(key), text_of(value)) for key, value in (result or {}).items()]


def label_of(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    words = str(key).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def text_of(value: Any, *, depth: int = 0) -> str:
    """Short readable text: lists joined, dicts as `label: value`, long text cut."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and ISO_TIME.match(value):
        # Results keep times as ISO text (JSON); shown like every other time.
        with contextlib.suppress(ValueError):
            value = datetime.fromisoformat(value).astimezone(UTC)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, dict):
        if depth > 1:
            return f"{len(value)} fields"
        parts = [f"{label_of(k).lower()}: {text_of(v, depth=depth + 1)}" for k, v in value.items()]
        return _cut("; ".join(parts[:MAX_ITEMS]) + _more(len(parts)))
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        parts = [text_of(v, depth=depth + 1) for v in value[:MAX_ITEMS]]
        return _cut(", ".join(parts) + _more(len(value)))
    return _cut(str(value))


def _more(total: int) -> str:
    return f" … and {total - MAX_ITEMS} more" if total > MAX_ITEMS else ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


@register.filter
def age(value: timedelta | None) -> str:
    """A timedelta as "3 days 4 h", "2 h 5 min" or "40 s"."""
    if value is None:
        return "–"
    seconds = max(0, int(value.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} day{'s' if days != 1 else ''} {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min" if minutes else f"{seconds} s"
