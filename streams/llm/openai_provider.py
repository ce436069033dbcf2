"""The LLM port over the `openai` client: OpenAI itself or any OpenAI-compatible server.

The domain only ever sees `LLMResult` or `LLMError`. Everything the client can throw
(status errors, timeouts, refused connections, a 200 whose body is not JSON, a completion
without content) becomes an `LLMError`, because the callers' contract is simple: an
error leaves the scope untouched and the run is retried later. Plain values come in
through the constructor, so this module does not depend on Django.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import openai
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion

from streams.llm.negotiation import (
    DOWN,
    MemoryGetter,
    drop_temperature,
    step_down_output,
    terms_for,
)
from streams.llm.port import LLMError, LLMRequest, LLMResult, log_llm_call
from streams.llm.schemas import response_format

logger = logging.getLogger("streams.llm")

SYSTEM_MESSAGE = (
    "You are the memory component of an AI agent platform: you extract, consolidate and "
    "share what is worth remembering about users, groups and the agent's work. Follow the "
    "instructions in the user message exactly and answer in the format it asks for."
)
TASK_HEADER = "X-Memory-Task"
EMBEDDING_TASK = "embedding"


class OpenAIProvider:
    """One provider per configuration; it owns one `openai.OpenAI` client, made on first use.

    Lazily, so that building a provider (at import or settings time) never opens sockets
    and a process that forks (Celery, gunicorn) creates its client after the fork.
    """

    name = "openai"

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None,
        model_fast: str,
        model_slow: str,
        timeout_seconds: float,
        max_retries: int,
        task_timeouts: dict[str, float] | None = None,
        terms_memory: MemoryGetter | None = None,
    ) -> None:
        self.api_key = api_key
        self.base_url = base_url
        self.model_fast = model_fast
        self.model_slow = model_slow
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.task_timeouts = dict(task_timeouts or {})
        self.terms_memory = terms_memory  # where what the server accepts is shared
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # no api key in logs or tracebacks
        return (
            f"OpenAIProvider(base_url={self.base_url!r}, model_fast={self.model_fast!r}, "
            f"model_slow={self.model_slow!r})"
        )

    @property
    def client(self) -> openai.OpenAI:
        """The one client of this provider, created once even when threads race for it."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    try:
                        self._client = openai.OpenAI(
                            api_key=self.api_key,
                            base_url=self.base_url or None,
                            timeout=self.timeout_seconds,
                            max_retries=self.max_retries,
                        )
                    except openai.OpenAIError as exc:  # e.g. no API key configured
                        raise LLMError(f"OpenAI client could not be created: {exc}") from exc
        return self._client

    def model_for(self, request: LLMRequest) -> str:
        """The model the request names (an agent's or scope's setting), else by tier: the
        slow (stronger) model consolidates; the fast one extracts and propagates."""
        if request.model:
            return request.model
        return self.model_slow if request.tier == "slow" else self.model_fast

    def timeout_for(self, task: str) -> float:
        """The task's timeout (a slow local server needs minutes to consolidate)."""
        return float(self.task_timeouts.get(task, self.timeout_seconds))

    def options_for(self, request: LLMRequest) -> dict[str, Any]:
        """What is sent beside the messages, as far as this server accepts it."""
        terms = terms_for(self.base_url, self.terms_memory)
        options: dict[str, Any] = {}
        if terms.temperature:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options["max_tokens"] = request.max_tokens
        if request.schema is not None and terms.output == "json_schema":
            options["response_format"] = response_format(request.task, request.schema)
        elif request.json_output and terms.output != "text":
            options["response_format"] = {"type": "json_object"}
        return options

    def complete(self, request: LLMRequest) -> LLMResult:
        model = self.model_for(request)
        what = f"{request.task} call to {model}"
        started = time.monotonic()
        for _ in range(len(DOWN) + 2):  # each refusal steps down once: a bounded loop
            options = self.options_for(request)
            try:
                completion = self.client.chat.completions.create(
                    model=model,
                    messages=[
                        {"role": "system", "content": SYSTEM_MESSAGE},
                        {"role": "user", "content": request.prompt},
                    ],
                    extra_headers={TASK_HEADER: request.task},
                    timeout=self.timeout_for(request.task),
                    **options,
                )
                break
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if not self._step_down(exc, options):
                    raise _as_llm_error(exc, what=what, provider=self) from exc
            except (openai.OpenAIError, ValueError) as exc:  # ValueError: a 200 not JSON
                timeout = self.timeout_for(request.task)
                raise _as_llm_error(exc, what=what, provider=self, timeout=timeout) from exc
        else:
            raise LLMError(f"OpenAI {what} was refused with every output mode")
        duration_ms = _elapsed_ms(started)
        text = _completion_text(completion, what=what)
        usage = getattr(completion, "usage", None)
        result = LLMResult(
            text=text,
            model=completion.model or model,
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
            duration_ms=duration_ms,
            extra={
                "response_id": completion.id,
                "finish_reason": completion.choices[0].finish_reason,
            },
        )
        log_llm_call(request.task, result)
        return result

    def _step_down(self, exc: openai.APIStatusError, options: dict[str, Any]) -> bool:
        """Whether a refusal names something this server may go without (then remembered)."""
        message = str(exc.message or "").lower()
        sent = options.get("response_format")
        if sent is not None and any(w in message for w in ("response_format", "schema", "json")):
            step_down_output(
                self.base_url, refused=sent["type"], reason=exc.message, memory=self.terms_memory
            )
            return True
        if "temperature" in options and "temperature" in message:
            drop_temperature(self.base_url, reason=exc.message, memory=self.terms_memory)
            return True
        return False

    def embed(self, texts: list[str], model: str) -> list[list[float]]:
        """One vector per text, in order; the same errors as `complete` become `LLMError`."""
        if not texts:
            return []
        started = time.monotonic()
        what = f"embedding call to {model}"
        try:
            response = self.client.embeddings.create(
                model=model,
                input=texts,
                encoding_format="float",
                extra_headers={TASK_HEADER: EMBEDDING_TASK},
            )
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a 200 that is not JSON
            raise _as_llm_error(exc, what=what, provider=self) from exc
        if not isinstance(response, CreateEmbeddingResponse):
            raise LLMError(f"OpenAI {what} answered something that is not an embeddings list")
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts) or any(not v for v in vectors):
            raise LLMError(f"OpenAI {what} answered {len(vectors)} vectors for {len(texts)} texts")
        usage = getattr(response, "usage", None)
        logger.info(
            "llm %s model=%s texts=%d prompt_tokens=%d duration_ms=%d",
            EMBEDDING_TASK,
            response.model or model,
            len(texts),
            (usage.prompt_tokens or 0) if usage else 0,
            _elapsed_ms(started),
        )
        return [list(v) for v in vectors]


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _completion_text(completion: object, *, what: str) -> str:
    """The assistant's text, or an `LLMError` saying what was wrong with the answer.

    The client returns a bare string when a proxy answers 200 with a non-JSON content
    type, so the type is checked before anything else.
    """
    if not isinstance(completion, ChatCompletion):
        raise LLMError(f"OpenAI {what} answered something that is not a chat completion")
    if not completion.choices:
        raise LLMError(f"OpenAI {what} answered no choices")
    message = completion.choices[0].message
    if message.refusal:
        raise LLMError(f"OpenAI {what} refused: {message.refusal}")
    if not message.content or not message.content.strip():
        reason = completion.choices[0].finish_reason
        raise LLMError(f"OpenAI {what} answered empty content (finish_reason={reason})")
    if completion.choices[0].finish_reason == "length":
        # Cut at max_tokens: half a memory or half a JSON object is never stored.
        raise LLMError(f"OpenAI {what} was cut at max_tokens (finish_reason=length)")
    return message.content


def _as_llm_error(
    exc: Exception, *, what: str, provider: OpenAIProvider, timeout: float | None = None
) -> LLMError:
    """A clear message per failure kind; the caller chains the original exception."""
    attempts = provider.max_retries + 1
    if isinstance(exc, openai.APITimeoutError):
        seconds = provider.timeout_seconds if timeout is None else timeout
        return LLMError(f"OpenAI {what} timed out after {seconds:g} s ({attempts} attempt(s))")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(
            f"OpenAI {what} could not reach {provider.base_url or 'the OpenAI API'} "
            f"({attempts} attempt(s)): {exc}"
        )
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"OpenAI {what} failed with HTTP {exc.status_code}: {exc.message}")
    if isinstance(exc, json.JSONDecodeError):
        return LLMError(f"OpenAI {what} answered a body that is not valid JSON: {exc}")
    return LLMError(f"OpenAI {what} failed: {type(exc).__name__}: {exc}")
