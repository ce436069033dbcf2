"""What each OpenAI-compatible server accepts, learnt once per base URL and remembered.

A request asks for `response_format: json_schema` and a `temperature`. A server that
refuses the schema (HTTP 400/422 naming it) is asked again with `json_object`, one that
refuses that too with plain text (the answer's JSON is then read through fences and
prose); one that refuses `temperature` is asked again without it. Each step down is
taken once per base URL in this process, logged as a warning, and shown in
`/api/v1/health`, so an operator sees that the server does not constrain its answers.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from typing import Literal

logger = logging.getLogger("streams.llm")

OutputMode = Literal["json_schema", "json_object", "text"]
DOWN: dict[OutputMode, OutputMode] = {"json_schema": "json_object", "json_object": "text"}
DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ServerTerms:
    output: OutputMode = "json_schema"
    temperature: bool = True
    warnings: tuple[str, ...] = field(default=())


_lock = threading.Lock()
_terms: dict[str, ServerTerms] = {}


def terms_for(base_url: str | None) -> ServerTerms:
    with _lock:
        return _terms.get(base_url or DEFAULT_BASE_URL, ServerTerms())


def step_down_output(base_url: str | None, *, refused: OutputMode, reason: str) -> OutputMode:
    """The next output mode after `refused` (remembered); "text" stays "text"."""
    key = base_url or DEFAULT_BASE_URL
    with _lock:
        terms = _terms.get(key, ServerTerms())
        if terms.output != refused:  # another thread stepped down first
            return terms.output
        lower = DOWN.get(refused, "text")
        warning = f"{key} refused response_format {refused} ({reason[:200]}); now {lower}"
        _terms[key] = replace(terms, output=lower, warnings=(*terms.warnings, warning))
    logger.warning("llm server %s", warning)
    return lower


def drop_temperature(base_url: str | None, *, reason: str) -> None:
    key = base_url or DEFAULT_BASE_URL
    with _lock:
        terms = _terms.get(key, ServerTerms())
        if not terms.temperature:
            return
        warning = f"{key} refused temperature ({reason[:200]}); sent without it"
        _terms[key] = replace(terms, temperature=False, warnings=(*terms.warnings, warning))
    logger.warning("llm server %s", warning)


def negotiated() -> dict[str, dict[str, object]]:
    """Per base URL learnt so far: the output mode, whether temperature is sent, warnings."""
    with _lock:
        return {
            url: {
                "output": t.output,
                "temperature": t.temperature,
                "warnings": list(t.warnings),
            }
            for url, t in sorted(_terms.items())
        }


def forget() -> None:
    """Start over (tests; a reconfigured server)."""
    with _lock:
        _terms.clear()
