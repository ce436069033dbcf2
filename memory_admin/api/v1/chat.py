"""`POST /agents/{agent_id}/chat/completions`: OpenAI-compatible chat with memory built in.

An agent that uses the `openai` package points its base URL at
`/api/v1/agents/{agent_id}` and its key at one of ours. Each call: memory context
for the last user message, injected as a system message (`streams.context.chat`); the
request forwarded to the configured upstream (`memory_admin.integrations.chat_upstream`); the
upstream's answer returned unchanged (JSON, or SSE chunks relayed as they arrive);
then, after the answer is sent, the call recorded and the turn queued for ingest.

Errors: the upstream's are mapped to our own OpenAI-shaped body (`upstream_error`; its
401 becomes a 502, its text is never relayed); ours (auth, validation, no upstream
configured, too many calls at once) use the API's envelope, which `openai` clients
parse too (`error.message`, `error.code`).

Long because: the OpenAI-compatible handler, its streamed relay and its after-send
recording are one protocol sharing private response classes (`_RelayResponse`,
`_AfterSendResponse`); split, each half would reach into the other.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Annotated, Any

import httpx2 as httpx
from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Field, Path, Router, Schema
from pydantic import ConfigDict, StrictBool, StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.errors import error_response
from memory_admin.api.v1.schemas import ExternalId, error_responses
from memory_admin.chat_tools import completion_as_sse, memory_tool_on, run_tool_rounds
from memory_admin.integrations.chat_limits import RETRY_AFTER_SECONDS, Refusal, chat_slots
from memory_admin.integrations.chat_upstream import (
    SseAnswer,
    Upstream,
    UpstreamUnreachable,
    answer_text,
    count_skipped_context,
    forward,
    iter_chunks,
    openai_error,
    passed_headers,
    read_all,
    upstream_config,
    upstream_error,
    upstream_model,
)
from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.jobs.tasks import dispatch_now
from memory_admin.stores import MemoryStore, get_store
from streams.actions.chat import do_chat_turn_finish
from streams.actions.forget_requests import do_forget_request
from streams.context.chat import ChatMemory, ChatOutcome, ChatTurn, chat_prepare
from streams.context.chat_tool import offer_tool
from streams.core.documents import Job
from streams.core.exceptions import InvalidInput, MemoryServiceError, Unavailable

logger = logging.getLogger("memory_admin.chat")

MEMORY_HEADERS = {
    "user_id": "X-Memory-User-Id",
    "user_name": "X-Memory-User-Name",
    "session_id": "X-Memory-Session-Id",
    "groups": "X-Memory-Groups",
}
MAX_CHAT_MESSAGES = 2_000
MIN_MEMORY_TOKENS = 16  # `metadata.memory_max_tokens`, as `max_tokens` on POST .../context
MAX_MEMORY_TOKENS = 1_000_000
MAX_DROPPED_HEADER = 20
MEMORY_METADATA = {*MEMORY_HEADERS, "memory_max_tokens"}  # ours: never forwarded upstream
MAX_GROUPS = 100
# Threads start on first use (after a fork), so a preloaded app is safe.
_AFTER_SEND = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chat-after-send")
_in_flight: set[Future[None]] = set()
_in_flight_lock = threading.Lock()


class ChatMessageIn(Schema):
    """One OpenAI chat message; fields other than `role` pass through untouched."""

    model_config = ConfigDict(extra="allow")
    role: Annotated[str, StringConstraints(min_length=1, max_length=64)]


class ChatCompletionIn(Schema):
    """The OpenAI chat request; every field not named here is forwarded as sent."""

    model_config = ConfigDict(extra="allow")
    model: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    messages: list[ChatMessageIn] = Field(..., min_length=1, max_length=MAX_CHAT_MESSAGES)
    stream: StrictBool | None = None
    metadata: dict[str, Any] | None = Field(
        None,
        description="Memory fields `user_id`, `session_id` (required here or as "
        "`X-Memory-*` headers), `user_name`, `groups` (`g1=Eden Team,g2` or a JSON list), "
        "`memory_max_tokens` (the memory context's budget; `max_tokens` stays the answer's); "
        "other keys are forwarded upstream.",
    )


router = Router(tags=["chat"])


@router.post(
    "/agents/{agent_id}/chat/completions",
    auth=needs("read", "write"),
    response={200: dict[str, Any], **error_responses(400, 401, 404, 413, 422, 429, 503)},
    summary="OpenAI-compatible chat completion with memory",
)
def chat_completions(
    request: HttpRequest, agent_id: Path[ExternalId], payload: ChatCompletionIn
) -> HttpResponse | StreamingHttpResponse:
    """Memory in, the upstream's answer out (JSON, or SSE when `stream` is true).

    Response headers: `X-Memory-Remembered: queued` when the user asked to remember
    something (formed once the turn is filed, at any message count),
    `X-Memory-Forget: proposed|applied|nothing_found; observations=N` when they asked to
    forget (MEMORY_FORGET_REQUESTS: review holds a proposal, apply deletes at once),
    `X-Memory-Context: injected | empty | skipped` and
    `X-Memory-Call-Id` (the inspection record of this call), `X-Memory-Context-Call-Id`
    (the context log's record of the memory given; empty when the log is off).
    """
    started = time.monotonic()  # the call's timings include the memory work
    require_agent(request, agent_id)
    body: dict[str, Any] = json.loads(request.body)
    memory = memory_fields(body.get("metadata"), request)
    upstream = upstream_config()
    if upstream is None:
        raise Unavailable("no chat upstream is configured (MEMORY_CHAT_UPSTREAM_BASE_URL)")
    release = chat_slots.take(request.auth.pk)  # type: ignore[attr-defined]
    if isinstance(release, Refusal):
        return _refused(release)
    try:
        response = _answer(request, agent_id, body, memory, upstream, started, release)
    except BaseException:
        release()
        raise
    if not isinstance(response, StreamingHttpResponse):
        release()  # a stream's relay lets go of its slot when the stream ends
    return response


def _refused(refusal: Refusal) -> HttpResponse:
    response = error_response(
        refusal.status,
        code=refusal.code,
        message=refusal.message,
        details={"limit": refusal.limit, "retry_after_seconds": RETRY_AFTER_SECONDS},
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _answer(
    request: HttpRequest,
    agent_id: str,
    body: dict[str, Any],
    memory: ChatMemory,
    upstream: Upstream,
    started: float,
    release: Callable[[], None],
) -> HttpResponse | StreamingHttpResponse:
    """The call itself, holding one of the process's chat slots (`chat_limits`)."""
    store = _store_or_none()
    turn = chat_prepare(
        store=store,
        agent_id=agent_id,
        memory=memory,
        messages=body["messages"],
        semantic=semantic_ranker(),
        actor=str(api_actor(request)),
    )
    if turn.memory_status == "skipped" and turn.user_text is not None:
        count_skipped_context()
    _forget_request(request, turn)
    forwarded = _forwarded_body(body, turn)
    stream = bool(body.get("stream"))

    def outcome(kind: str, status: int | None, answer: str = "", first: float | None = None):
        return ChatOutcome(
            outcome=kind,  # type: ignore[arg-type]
            stream=stream,
            model=body["model"],
            upstream_model=forwarded["model"],
            upstream_status=status,
            answer=answer,
            first_chunk_ms=None if first is None else (first - started) * 1000,
            duration_ms=(time.monotonic() - started) * 1000,
        )

    if store is not None and memory_tool_on(store, agent_id) and offer_tool(forwarded):
        return _tool_answer(upstream, forwarded, turn, store, outcome, stream)
    try:
        upstream_response = forward(upstream, forwarded)
        if upstream_response.status_code != 200 or not stream:
            content = read_all(upstream_response)
    except UpstreamUnreachable as exc:
        return _unreachable(exc, turn, outcome)
    status = upstream_response.status_code
    headers = passed_headers(upstream_response, upstream.api_key)
    if status != 200:
        ours, error = upstream_error(status, content, upstream.api_key)
        response = _json_response(error, ours, turn, headers)
        return _after(response, turn, lambda: outcome("upstream_error", status))
    if not stream:
        response = _raw_response(content, status, upstream_response, turn, headers)
        text = answer_text(content)
        return _after(response, turn, lambda: outcome("answered", status, text))
    return _relay(upstream_response, turn, headers, finish=outcome, release=release)


def _unreachable(
    exc: UpstreamUnreachable, turn: ChatTurn, outcome: Callable[..., ChatOutcome]
) -> HttpResponse:
    logger.warning("chat %s: %s", turn.call_id, exc)
    error = openai_error(str(exc), code="upstream_unreachable")
    failed = exc.status
    response = _json_response(error, failed, turn, {})
    return _after(response, turn, lambda: outcome("upstream_unreachable", failed))


def _tool_answer(
    upstream: Upstream,
    forwarded: dict[str, Any],
    turn: ChatTurn,
    store: MemoryStore,
    outcome: Callable[..., ChatOutcome],
    stream: bool,
) -> HttpResponse:
    """With the memory tool offered: its rounds (`memory_admin.chat_tools`), then the
    final answer, as JSON or as server-sent events made from it."""
    try:
        result = run_tool_rounds(
            upstream=upstream, body=forwarded, turn=turn, store=store, semantic=semantic_ranker()
        )
    except UpstreamUnreachable as exc:
        return _unreachable(exc, turn, outcome)
    status = result.status
    if status != 200:
        ours, error = upstream_error(status, result.content, upstream.api_key)
        response = _json_response(error, ours, turn, result.headers)
        return _after(response, turn, lambda: outcome("upstream_error", status))
    content = completion_as_sse(result.content) if stream else result.content
    response = _AfterSendResponse(content, status=200, headers=result.headers)
    response["Content-Type"] = "text/event-stream" if stream else "application/json"
    if stream:
        response["Cache-Control"] = "no-cache"
    _memory_headers(response, turn)
    text = answer_text(result.content)
    return _after(response, turn, lambda: outcome("answered", 200, text))


def memory_fields(metadata: Any, request: HttpRequest) -> ChatMemory:
    """The memory fields from `metadata` (which wins) or the `X-Memory-*` headers."""
    metadata = metadata if isinstance(metadata, dict) else {}
    values: dict[str, Any] = {}
    for name, header in MEMORY_HEADERS.items():
        value = metadata.get(name)
        values[name] = value if value not in (None, "") else request.headers.get(header)
    details = []
    for name in ("user_id", "session_id"):
        value = values[name]
        if not isinstance(value, str) or not 1 <= len(value) <= 128:
            details.append(
                {
                    "field": f"metadata.{name}",
                    "message": f"required: a string of 1..128 characters in `metadata` "
                    f"or the {MEMORY_HEADERS[name]} header",
                }
            )
    user_name = values["user_name"]
    if user_name is not None and (not isinstance(user_name, str) or len(user_name) > 200):
        details.append({"field": "metadata.user_name", "message": "at most 200 characters"})
    max_tokens = _memory_max_tokens(metadata.get("memory_max_tokens"))
    if max_tokens is False:
        details.append(
            {
                "field": "metadata.memory_max_tokens",
                "message": f"the memory budget: a whole number of tokens, "
                f"{MIN_MEMORY_TOKENS}..{MAX_MEMORY_TOKENS}",
            }
        )
    groups = _groups(values["groups"])
    if groups is None:
        details.append(
            {
                "field": "metadata.groups",
                "message": f"`g1=Name,g2` or a JSON list of ids or {{id, name}}; "
                f"at most {MAX_GROUPS}, ids of 1..128 characters",
            }
        )
    if details:
        raise InvalidInput("memory fields are missing or invalid", details=details)
    return ChatMemory(
        user_id=values["user_id"],
        session_id=values["session_id"],
        user_name=(user_name or "").strip() or None,
        groups=tuple(groups or ()),
        max_tokens=max_tokens or None,
    )


def _memory_max_tokens(value: Any) -> int | None | bool:
    """`metadata.memory_max_tokens` (an int, or its digits: OpenAI metadata values are
    strings); None when absent, False when invalid."""
    if value in (None, ""):
        return None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 9:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return value if MIN_MEMORY_TOKENS <= value <= MAX_MEMORY_TOKENS else False


def _groups(value: Any) -> list[tuple[str, str | None]] | None:
    """Groups as `[(id, name)]`; None when malformed."""
    if value in (None, ""):
        return []
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    groups: list[tuple[str, str | None]] = []
    if isinstance(value, str):
        for part in value.split(","):
            group_id, _, name = part.partition("=")
            if group_id.strip():
                groups.append((group_id.strip(), name.strip() or None))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                groups.append((item, None))
            elif isinstance(item, dict) and isinstance(item.get("id"), str):
                label = item.get("name")
                groups.append((item["id"], label if isinstance(label, str) and label else None))
            else:
                return None
    else:
        return None
    if len(groups) > MAX_GROUPS or any(not 1 <= len(g) <= 128 for g, _ in groups):
        return None
    return list(dict.fromkeys(groups))


def _forwarded_body(body: dict[str, Any], turn: ChatTurn) -> dict[str, Any]:
    """The request as the upstream gets it: mapped model, memory injected, our keys removed."""
    forwarded = {**body, "model": upstream_model(body["model"]), "messages": turn.messages}
    metadata = {k: v for k, v in (body.get("metadata") or {}).items() if k not in MEMORY_METADATA}
    if metadata:
        forwarded["metadata"] = metadata
    else:
        forwarded.pop("metadata", None)
    return forwarded


def _memory_headers(response: HttpResponse | StreamingHttpResponse, turn: ChatTurn) -> None:
    response["X-Memory-Context"] = turn.memory_status
    response["X-Memory-Call-Id"] = turn.call_id
    # The context log's record of the memory given (empty when the log is off).
    response["X-Memory-Context-Call-Id"] = turn.context_call_id or ""
    # An explicit "remember that ...": the turn is formed as soon as it is filed.
    if turn.memory_request is not None and turn.memory_request.kind == "remember":
        response["X-Memory-Remembered"] = "queued"
    if turn.memory_tool != "off":  # offered, answered (the model called it), rounds_exceeded
        response["X-Memory-Tool"] = turn.memory_tool
    if turn.forget is not None:  # "forget what I said about X": proposed, applied or none
        count = len(turn.forget["observation_ids"])
        response["X-Memory-Forget"] = f"{turn.forget['status']}; observations={count}"
    if turn.dropped:  # what `metadata.memory_max_tokens` left out (the log has the full list)
        response["X-Memory-Dropped"] = ", ".join(turn.dropped[:MAX_DROPPED_HEADER])


def _forget_request(request: HttpRequest, turn: ChatTurn) -> None:
    """The user's "forget that ..." acts before the answer, so the answer can say what it
    did (`X-Memory-Forget`, the call record's `memory_request.forget`)."""
    asked = turn.memory_request
    store = _store_or_none()
    if asked is None or asked.kind != "forget" or store is None:
        return
    try:
        outcome = do_forget_request(
            store=store,
            actor=api_actor(request),
            agent_id=turn.agent_id,
            user_id=turn.memory.user_id,
            session_id=turn.memory.session_id,
            request=asked,
            mode=settings.MEMORY_FORGET_REQUESTS,
        )
    except MemoryServiceError as exc:  # the answer goes on; the record says nothing was done
        logger.warning("chat %s: the forget request failed: %s", turn.call_id, exc)
        return
    turn.forget = outcome.to_dict()


def _json_response(
    body: dict[str, Any], status: int, turn: ChatTurn, headers: dict[str, str]
) -> _AfterSendResponse:
    response = _AfterSendResponse(json.dumps(body), status=status, headers=headers)
    response["Content-Type"] = "application/json"
    # In OpenAI's shape on purpose: the API's middleware must not re-envelope it.
    response.relays_upstream_error = status >= 400  # type: ignore[attr-defined]
    _memory_headers(response, turn)
    return response


def _raw_response(
    content: bytes,
    status: int,
    upstream_response: httpx.Response,
    turn: ChatTurn,
    headers: dict[str, str],
) -> _AfterSendResponse:
    content_type = upstream_response.headers.get("content-type", "application/json")
    response = _AfterSendResponse(content, status=status, headers=headers)
    response["Content-Type"] = content_type  # an answer (200): errors are ours, above
    _memory_headers(response, turn)
    return response


class _AfterSendResponse(HttpResponse):
    """An HttpResponse that runs a hook once the server has sent it (`close()`)."""

    after_send: Callable[[], None] | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            hook, self.after_send = self.after_send, None
            if hook is not None:
                hook()


def _after(
    response: _AfterSendResponse, turn: ChatTurn, outcome: Callable[[], ChatOutcome]
) -> HttpResponse:
    promise = _promised()
    response.after_send = lambda: _finish_later(promise, turn, outcome)
    return response


def _relay(
    upstream_response: httpx.Response,
    turn: ChatTurn,
    headers: dict[str, str],
    *,
    finish: Callable[..., ChatOutcome],
    release: Callable[[], None],
) -> StreamingHttpResponse:
    """SSE chunks relayed as they arrive; the turn is finished when the stream ends.

    A client that hangs up makes the server close the response, which closes this
    generator (GeneratorExit at the `yield`): the upstream stream is closed and the
    user turn is still ingested. A response closed before it was ever iterated is
    finished by `_RelayResponse.close` instead.
    """
    finished = threading.Event()
    promise = _promised()

    def done(kind: str, text: str, first: float | None) -> None:
        if finished.is_set():
            return
        finished.set()
        upstream_response.close()
        release()
        _finish_later(promise, turn, lambda: finish(kind, 200, text, first))

    def chunks() -> Iterator[bytes]:
        answer = SseAnswer()
        kind, first = "client_disconnected", None
        try:
            for chunk in iter_chunks(upstream_response):
                first = first or time.monotonic()
                answer.feed(chunk)
                yield chunk
            kind = "answered"
        except httpx.HTTPError as exc:
            logger.warning("chat %s: the upstream broke off its stream: %s", turn.call_id, exc)
            kind = "upstream_unreachable"
        finally:
            done(kind, answer.text, first)

    content_type = upstream_response.headers.get("content-type", "text/event-stream")
    response = _RelayResponse(chunks(), content_type=content_type, headers=headers)
    response.on_close = lambda: done("client_disconnected", "", None)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass chunks on, do not buffer
    _memory_headers(response, turn)
    return response


class _RelayResponse(StreamingHttpResponse):
    """Closing it closes the relay; `on_close` finishes a turn whose relay never started."""

    on_close: Callable[[], None] | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            hook, self.on_close = self.on_close, None
            if hook is not None:
                hook()


def _promised() -> Future[None]:
    """The after-answer work of a turn whose answer is built, counted in flight from now
    on: the server closes the response, and so hands the work over, only after the client
    may have read it, and `after_send_drain` must not miss it in between."""
    promise: Future[None] = Future()
    with _in_flight_lock:
        _in_flight.add(promise)
    promise.add_done_callback(_forget_future)
    return promise


def _finish_later(
    promise: Future[None], turn: ChatTurn, outcome: Callable[[], ChatOutcome]
) -> None:
    """Hand the after-answer work to this process's small pool, off the request thread;
    `promise` is kept when it is done.

    On the request thread it would hold the connection: a client's next call on the
    same keep-alive connection would wait for the previous turn's ingest. The pool's
    threads are joined at interpreter exit, so a graceful shutdown still finishes them.
    """
    try:
        future = _AFTER_SEND.submit(_finish, turn, outcome())
    except BaseException:
        promise.set_result(None)
        raise
    future.add_done_callback(lambda _: promise.set_result(None))


def _forget_future(future: Future[None]) -> None:
    with _in_flight_lock:
        _in_flight.discard(future)


def after_send_drain(timeout: float = 30.0) -> bool:
    """Wait for the after-answer work of every answer built so far (recording calls,
    ingests), handed over or about to be.

    For whoever is about to pull the store away (a test dropping its database, a
    shutdown): a turn still being filed would otherwise race it. True if all finished.
    """
    with _in_flight_lock:
        pending = list(_in_flight)
    return not wait(pending, timeout=timeout).not_done


def _store_or_none() -> MemoryStore | None:
    """The store, or None when it cannot be used now (down, or its indexes cannot be made):
    the answer then goes upstream without memory."""
    try:
        return get_store()
    except MemoryServiceError as exc:
        logger.warning("chat: the memory store cannot be used: %s", exc)
        return None


def _finish(turn: ChatTurn, outcome: ChatOutcome) -> None:
    """Record the call and queue its ingest; never raises (the answer is already out)."""
    also: list[Job] = []
    try:
        job = do_chat_turn_finish(store=get_store(), turn=turn, outcome=outcome, also=also)
    except Exception:
        logger.exception("chat %s: recording the call and its ingest failed", turn.call_id)
        return
    for each in [job, *also] if job is not None else also:
        try:  # a job not sent here is sent by the recovery sweep (it is committed)
            dispatch_now(each)
        except Exception:
            logger.exception("chat %s: queueing job %s failed", turn.call_id, each.id)
