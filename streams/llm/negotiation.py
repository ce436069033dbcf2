"""What each OpenAI-compatible server accepts, learnt once per base URL and remembered.

A request asks for `response_format: json_schema` and a `temperature`. A server that
refuses the schema (HTTP 400/422 naming it) is asked again with `json_object`, one that
refuses that too with plain text (the answer's JSON is then read through fences and
prose); one that refuses `temperature` is asked again without it. Each step down is
taken once per base URL, logged as a warning, kept in this process and, through a
`TermsMemory` (the store's `llm_servers`), for every process: a job's child process
learns it, the web process's `/api/v1/health` shows it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

logger = logging.getLogger("streams.llm")

OutputMode = Literal["json_schema", "json_object", "text"]
DOWN: dict[OutputMode, OutputMode] = {"json_schema": "json_object", "json_object": "text"}
DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ServerTerms:
    output: OutputMode = "json_schema"
    temperature: bool = True
    warnings: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "temperature": self.temperature,
            "warnings": list(self.warnings),
        }

    @classmethod
    def of(cls, doc: dict[str, Any]) -> ServerTerms:
        output = doc.get("output")
        return cls(
            output=output if output in ("json_schema", "json_object", "text") else "json_schema",
            temperature=bool(doc.get("temperature", True)),
            warnings=tuple(str(w) for w in doc.get("warnings") or ()),
        )


class TermsMemory(Protocol):
    """Where the terms outlive this process (`streams.store.llm_servers`)."""

    def load(self, base_url: str) -> dict[str, Any] | None: ...

    def save(self, base_url: str, terms: dict[str, Any]) -> None: ...


MemoryGetter = Callable[[], TermsMemory | None]

_lock = threading.Lock()
_terms: dict[str, ServerTerms] = {}


def key_of(base_url: str | None) -> str:
    return base_url or DEFAULT_BASE_URL


def terms_for(base_url: str | None, memory: MemoryGetter | None = None) -> ServerTerms:
    """This process's terms for the server; on first use, what another process saved."""
    key = key_of(base_url)
    with _lock:
        known = _terms.get(key)
    if known is not None:
        return known
    saved = _load(memory, key)
    with _lock:
        return _terms.setdefault(key, ServerTerms.of(saved) if saved else ServerTerms())


def step_down_output(
    base_url: str | None, *, refused: str, reason: str, memory: MemoryGetter | None = None
) -> None:
    """Take the next output mode after `refused` for this server (remembered)."""
    key = key_of(base_url)
    with _lock:
        terms = _terms.get(key, ServerTerms())
        if terms.output != refused:  # another thread stepped down first
            return
        lower = DOWN.get(terms.output, "text")
        warning = f"{key} refused response_format {refused} ({reason[:200]}); now {lower}"
        terms = _terms[key] = replace(terms, output=lower, warnings=(*terms.warnings, warning))
    logger.warning("llm server %s", warning)
    _save(memory, key, terms)


def drop_temperature(
    base_url: str | None, *, reason: str, memory: MemoryGetter | None = None
) -> None:
    key = key_of(base_url)
    with _lock:
        terms = _terms.get(key, ServerTerms())
        if not terms.temperature:
            return
        warning = f"{key} refused temperature ({reason[:200]}); sent without it"
        terms = _terms[key] = replace(terms, temperature=False, warnings=(*terms.warnings, warning))
    logger.warning("llm server %s", warning)
    _save(memory, key, terms)


def forget() -> None:
    """Start this process over (tests; a reconfigured server)."""
    with _lock:
        _terms.clear()


def _load(memory: MemoryGetter | None, key: str) -> dict[str, Any] | None:
    try:
        found = memory() if memory is not None else None
        return found.load(key) if found is not None else None
    except Exception:  # noqa: BLE001 - an unreachable store must not stop the model call
        logger.warning("llm server terms for %s could not be read", key, exc_info=True)
        return None


def _save(memory: MemoryGetter | None, key: str, terms: ServerTerms) -> None:
    try:
        found = memory() if memory is not None else None
        if found is not None:
            found.save(key, terms.as_dict())
    except Exception:  # noqa: BLE001 - the step down holds in this process anyway
        logger.warning("llm server terms for %s could not be saved", key, exc_info=True)
