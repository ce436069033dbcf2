"""The JSON schemas a model's answer must follow, built per call from what its prompt lists.

Strict in OpenAI's sense (`"strict": true`): every object closes its properties and
requires them all, an optional value is nullable instead of absent. Scope labels are an
`enum` of exactly the targets the prompt names, ids an `enum` of the ids it shows: a
server that honours the schema cannot answer a label or an id the parser would drop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def extraction_schema(
    *, labels: Iterable[str], speaker_ids: Iterable[str], message_ids: Iterable[str]
) -> dict[str, Any]:
    """The extraction answer: observations, each with one listed scope label, the people it
    is about and the lines it comes from (ids the prompt shows), and an optional expiry."""
    item = _closed(
        {
            "content": {"type": "string"},
            "scope": _choice(labels),
            "about": {"type": "array", "items": _choice(speaker_ids)},
            "sources": {"type": "array", "items": _choice(message_ids)},
            "expires_at": {"type": ["string", "null"]},
        }
    )
    return _closed({"observations": {"type": "array", "items": item}})


def propagation_schema(*, targets: Iterable[str], candidate_ids: Iterable[str]) -> dict[str, Any]:
    """The propagation answer: copies, each to one listed target, supporting one listed open
    candidate or none."""
    candidates = list(dict.fromkeys(candidate_ids))
    supports: dict[str, Any] = (
        {"type": ["string", "null"], "enum": [*candidates, None]}
        if candidates
        else {"type": "null"}
    )
    item = _closed({"content": {"type": "string"}, "scope": _choice(targets), "supports": supports})
    return _closed({"observations": {"type": "array", "items": item}})


def suggestion_schema() -> dict[str, Any]:
    """A suggested prompt: the whole revised text, and why."""
    return _closed({"prompt": {"type": "string"}, "why": {"type": "string"}})


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The `response_format` value of a request whose answer follows `schema`."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def _choice(values: Iterable[str]) -> dict[str, Any]:
    """A string among `values` (any string when there is none to list: an enum is never empty)."""
    listed = [v for v in dict.fromkeys(values) if v]
    return {"type": "string", "enum": listed} if listed else {"type": "string"}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
