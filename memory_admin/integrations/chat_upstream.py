"""Forwarding a chat completion to the configured OpenAI-compatible upstream, byte for byte.

httpx rather than the `openai` package: the proxy must return the upstream's answer
unchanged in shape (its JSON, its SSE chunks as they arrive), and the `openai` client
would parse and re-serialise all of them. Errors are the exception: the upstream's
become ours (`upstream_error`), in OpenAI's shape, without the upstream's text. One
`httpx.Client` per process (thread-safe, pooled); every request is sent with
`stream=True` so a streamed answer is relayed chunk by chunk without buffering.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx2 as httpx
from django.conf import settings

logger = logging.getLogger("memory_admin.chat")

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Upstream response headers a client may rely on (ids, rate limits, retry hints).
PASSED_HEADERS = ("x-request-id", "openai-processing-ms", "openai-version", "retry-after")
PASSED_PREFIXES = ("x-ratelimit-", "retry-after-")

_clients: dict[tuple[int, float], httpx.Client] = {}
_lock = threading.Lock()
_skipped = 0


@dataclass(frozen=True)
class Upstream:
    base_url: str
    api_key: str | None
    timeout: float


class UpstreamUnreachable(Exception):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def upstream_config() -> Upstream | None:
    """The configured upstream, falling back to the LLM settings; None if there is none."""
    api_key = settings.MEMORY_CHAT_UPSTREAM_API_KEY or settings.OPENAI_API_KEY
    base_url = settings.MEMORY_CHAT_UPSTREAM_BASE_URL or settings.OPENAI_BASE_URL
    if not base_url and api_key:
        base_url = OPENAI_DEFAULT_BASE_URL
    if not base_url:
        return None
    timeout = float(settings.MEMORY_CHAT_UPSTREAM_TIMEOUT_SECONDS)
    return Upstream(base_url=base_url.rstrip("/"), api_key=api_key, timeout=timeout)


def upstream_model(model: str) -> str:
    """The upstream's name for `model` per MEMORY_CHAT_MODEL_MAP ("a=b,c=d"), else `model`."""
    for pair in (settings.MEMORY_CHAT_MODEL_MAP or "").split(","):
        alias, _, target = pair.partition("=")
        if alias.strip() == model and target.strip():
            return target.strip()
    return model


def count_skipped_context() -> int:
    """Count one call that went upstream without memory; the process's total so far."""
    global _skipped
    with _lock:
        _skipped += 1
        return _skipped


def skipped_contexts() -> int:
    return _skipped


def _client(timeout: float) -> httpx.Client:
    key = (os.getpid(), timeout)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
                client = httpx.Client(timeout=timeout, limits=limits, cookies=_no_cookies())
                _clients[key] = client
    return client


def _no_cookies() -> CookieJar:
    """A jar that keeps nothing: the one client serves every agent and key, so a cookie
    the upstream sets for one caller must never ride along on another's request."""
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def forward(upstream: Upstream, body: dict[str, Any]) -> httpx.Response:
    """POST `body` to the upstream's chat completions; the response is open (not read yet).

    The caller reads or iterates it and closes it. Raises `UpstreamUnreachable` (502
    when the connection failed, 504 when the upstream did not answer in time).
    """
    headers = {
        "Content-Type": "application/json",
        "Accept-Encoding": "identity",  # chunks pass through as sent, never re-compressed
        "X-Memory-Task": "chat",
    }
    if upstream.api_key:
        headers["Authorization"] = f"Bearer {upstream.api_key}"
    client = _client(upstream.timeout)
    request = client.build_request(
        "POST",
        f"{upstream.base_url}/chat/completions",
        content=json.dumps(body).encode(),
        headers=headers,
    )
    try:
        return client.send(request, stream=True)
    except httpx.TimeoutException as exc:
        raise UpstreamUnreachable("the chat upstream did not answer in time", status=504) from exc
    except httpx.HTTPError as exc:
        raise UpstreamUnreachable("the chat upstream could not be reached", status=502) from exc


def read_all(response: httpx.Response) -> bytes:
    """The whole body of a non-streamed answer (or of an error), then the connection back."""
    try:
        return response.read()
    except httpx.TimeoutException as exc:
        raise UpstreamUnreachable("the chat upstream did not answer in time", status=504) from exc
    except httpx.HTTPError as exc:
        raise UpstreamUnreachable("the chat upstream broke off its answer", status=502) from exc
    finally:
        response.close()


def passed_headers(response: httpx.Response, secret: str | None = None) -> dict[str, str]:
    """The upstream headers a client may rely on, to set on our answer (never one that
    quotes the upstream key)."""
    return {
        name: value
        for name, value in response.headers.items()
        if (name.lower() in PASSED_HEADERS or name.lower().startswith(PASSED_PREFIXES))
        and not (secret and secret in value)
    }


# An upstream's own `code`, `type` or `param` is passed on only when it is a plain
# identifier (`context_length_exceeded`, `model`): lowercase words cannot carry a key.
_IDENTIFIER = re.compile(r"[a-z][a-z_]{0,63}")
# Statuses that describe the caller's request, kept as they are; every other one is ours.
_CALLER_STATUSES = frozenset({400, 404, 409, 413, 422, 429})


def upstream_error(status: int, content: bytes, secret: str | None) -> tuple[int, dict[str, Any]]:
    """Our status and OpenAI-shaped body for an upstream's error answer.

    The upstream's text is never relayed: an upstream (or a proxy before it) may echo
    the request, our upstream key included. Its 401/403 is about this service's key,
    not the caller's, so it becomes a 502; so does any 5xx. A 4xx about the request
    itself (bad parameters, unknown model, too long, rate limited) keeps its status.
    Operators find the upstream's own words in the log, the key redacted.
    """
    fields = _upstream_error_fields(content)
    text = content[:2000].decode("utf-8", "replace")
    if secret:
        text = text.replace(secret, "[redacted]")
    logger.warning("the chat upstream answered %s: %s", status, text)
    kind = fields.get("type") or "upstream_error"
    if status in (401, 403, 407):
        message = (
            f"the chat upstream refused this service's credentials (HTTP {status}); "
            "an operator must check MEMORY_CHAT_UPSTREAM_API_KEY"
        )
        return 502, _openai_error(message, "upstream_error", "upstream_auth_failed", None)
    if status in _CALLER_STATUSES:
        code = fields.get("code") or (
            "upstream_rate_limited" if status == 429 else "upstream_rejected"
        )
        message = (
            f"the chat upstream rejected the request (HTTP {status}, {code}); "
            "its own message is not relayed and is in the service's log"
        )
        return status, _openai_error(message, kind, code, fields.get("param"))
    message = (
        f"the chat upstream failed (HTTP {status}); "
        "its own message is not relayed and is in the service's log"
    )
    return 502, _openai_error(message, "upstream_error", "upstream_error", None)


def _upstream_error_fields(content: bytes) -> dict[str, str]:
    """The upstream error's `code`, `type` and `param` that are plain identifiers."""
    try:
        error = json.loads(content)["error"]
    except (ValueError, KeyError, TypeError):
        return {}
    if not isinstance(error, dict):
        return {}
    return {
        name: value
        for name in ("code", "type", "param")
        if isinstance(value := error.get(name), str) and _IDENTIFIER.fullmatch(value)
    }


def _openai_error(message: str, kind: str, code: str, param: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def openai_error(message: str, *, code: str) -> dict[str, Any]:
    """OpenAI's error shape, for failures the upstream could not describe itself."""
    return _openai_error(message, "upstream_error", code, None)


class SseAnswer:
    """Assembles the assistant's text from a relayed SSE stream, fed the raw bytes as relayed.

    Only `choices[0].delta.content` is collected (the answer that is ingested); lines
    that are not JSON data events (comments, `[DONE]`, keep-alives) are skipped.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._parts: list[str] = []
        self.done = False

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
            for choice in event.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if choice.get("index", 0) == 0 and isinstance(content, str):
                    self._parts.append(content)
        except (ValueError, AttributeError, TypeError):
            return

    @property
    def text(self) -> str:
        return "".join(self._parts)


def answer_text(content: bytes) -> str:
    """The assistant's text of a non-streamed completion (first choice), or ''."""
    try:
        message = json.loads(content)["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return ""
    text = message.get("content") if isinstance(message, dict) else None
    return text if isinstance(text, str) else ""


def iter_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The upstream's bytes as they arrive (each network read, not a fixed chunk size)."""
    yield from response.iter_bytes()
