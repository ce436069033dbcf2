"""A fake OpenAI-compatible HTTP server and the `fake_openai` fixture that points the app at it.

Why a server and not a mock: what our LLM port depends on is the real `openai` client's
behaviour (retries, timeouts, error classes, response parsing), and a mock would skip all of
it. The fake answers over a real socket, records every request, and plays a FIFO script of
behaviours (reply, fail, delay, malformed body, dropped connection), one per chat request;
an empty script falls back to the responder. Embeddings are never scripted.

Error replies carry `retry-after-ms: 10` by default: the client honours it instead of its
0.5 s, 1 s, ... exponential backoff, so retry paths stay fast. `retry_after=None` restores
the client's own backoff. Dropped connections and timeouts always get that backoff.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from streams.llm import negotiation
from tests.fakes import openai_schema
from tests.fakes import openai_wire as wire
from tests.fakes.openai_wire import (
    Behaviour,
    Delay,
    DropConnection,
    Fail,
    MalformedBody,
    RecordedRequest,
    Reply,
    Responder,
    Stream,
    ToolCall,
    default_responder,
    embedding_vector,
    extraction_responder,
    prompt_lines,
    propagation_prompt,
    propagation_responder,
)
from tests.fakes.real_model_shapes import ShapesResponder, shapes_plan

__all__ = [
    "Behaviour",
    "Delay",
    "DropConnection",
    "Fail",
    "FakeOpenAI",
    "MalformedBody",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Stream",
    "ToolCall",
    "default_responder",
    "embedding_vector",
    "extraction_responder",
    "prompt_lines",
    "fake_openai",
    "fake_openai_server",
    "propagation_prompt",
    "propagation_responder",
]

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out and hang up are expected here: stay quiet about them."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive like real servers: the client pools connections
    disable_nagle_algorithm = True  # headers and body go out as written: no 40 ms ACK stall
    fake: FakeOpenAI

    def do_POST(self) -> None:
        self.fake._handle(self)

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        """No per-request log lines: the recorded requests are the log."""


class FakeOpenAI:
    """The server: start it, point a client at `base_url`, script it, read `requests`.

    Scripting methods return the fake, so a script reads as one chain:
    `fake.fail(500, times=2).reply_json({"observations": []})`.
    """

    def __init__(self, *, embedding_dimensions: int = wire.DEFAULT_EMBEDDING_DIMENSIONS):
        self._lock = threading.Lock()
        self._script: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._responder: Responder = default_responder
        self._refused: set[str] = set()
        self._wake = threading.Event()
        self._default_dimensions = self.embedding_dimensions = embedding_dimensions
        handler = type("FakeOpenAIHandler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # so stop() returns at once
            name="fake-openai",
            daemon=True,
        ).start()
        return self

    def stop(self) -> None:
        self._wake.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget requests and script, restore defaults, and cut any pending delay short."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._responder = default_responder
            self._refused = set()
            self.embedding_dimensions = self._default_dimensions
            self._wake.set()
            self._wake = threading.Event()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order (a snapshot: safe to iterate)."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == EMBEDDINGS_PATH]

    @property
    def pending(self) -> int:
        """Scripted behaviours not yet consumed: assert 0 to prove every call was made."""
        with self._lock:
            return len(self._script)

    def enqueue(self, *behaviours: Behaviour) -> FakeOpenAI:
        with self._lock:
            self._script.extend(behaviours)
        return self

    def reply(self, text: str, headers: dict[str, str] | None = None) -> FakeOpenAI:
        return self.enqueue(Reply(text, tuple((headers or {}).items())))

    def reply_json(self, obj: Any, *, strict: bool = True) -> FakeOpenAI:
        """`strict=False` lets an extraction answer cite ids the prompt does not show."""
        return self.enqueue(Reply(json.dumps(obj), strict=strict))

    def fail(
        self,
        status: int = 500,
        times: int = 1,
        message: str | None = None,
        retry_after: float | None = 0.01,
        echo_headers: bool = False,
    ) -> FakeOpenAI:
        text = message or f"Fake failure with status {status}."
        return self.enqueue(*[Fail(status, text, retry_after, echo_headers)] * times)

    def delay(
        self, seconds: float, then: Behaviour | str | None = None, times: int = 1
    ) -> FakeOpenAI:
        """`times` > 1 makes the client's retries time out too (each attempt is a request)."""
        after = Reply(then) if isinstance(then, str) else then
        return self.enqueue(*[Delay(seconds, after)] * times)

    def stream(self, *parts: str, **options: Any) -> FakeOpenAI:
        """Stream the parts as SSE chunks (see `Stream` for holding them on an event)."""
        return self.enqueue(Stream(parts=parts, **options) if parts else Stream(**options))

    def tool_call(self, name: str, arguments: str, *more: tuple[str, str]) -> FakeOpenAI:
        """Answer with a call of `name` (and `more` (name, arguments) calls), when offered."""
        return self.enqueue(ToolCall(calls=((name, arguments), *more)))

    def malformed_body(self, body: bytes | None = None, times: int = 1) -> FakeOpenAI:
        return self.enqueue(*[MalformedBody(body) if body else MalformedBody()] * times)

    def drop_connection(self, times: int = 1) -> FakeOpenAI:
        return self.enqueue(*[DropConnection()] * times)

    def refuse(self, *what: str) -> FakeOpenAI:
        """Answer 400, as a server without the feature does, to chat requests that carry one of
        `what`: "json_schema" or "json_object" (a `response_format` of that type), or
        "temperature". Until the next `reset`; a refused request consumes no script."""
        with self._lock:
            self._refused |= set(what)
        return self

    def real_model_shapes(
        self,
        *,
        task: str | None = None,
        shapes: list[str] | None = None,
        label: str | None = None,
        refuse: tuple[str, ...] = (),
    ) -> ShapesResponder:
        """Answer like the real small models did (`tests/fakes/real_model_shapes.py`): each
        task's recorded shapes in turn (only `task`'s, or exactly `shapes`), as the server
        that gave them (one without json_schema refuses it). `label` is the scope label
        the extraction shapes write (default: the first speaker's); `refuse` adds what
        else the server lacks (`"temperature"`, as some servers do). Until `reset`."""
        names, refused = shapes_plan(task=task, shapes=shapes)
        responder = ShapesResponder(names, label=label)
        self.refuse(*refused, *refuse)
        self.set_responder(responder)
        return responder

    def set_responder(self, responder: Responder) -> FakeOpenAI:
        """Set what unscripted chat requests answer, until the next `reset`."""
        with self._lock:
            self._responder = responder
        return self

    # Serving: runs on the server's per-connection threads.
    def _handle(self, handler: _Handler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = urlsplit(handler.path).path
        headers = dict(handler.headers.items())
        recorded = RecordedRequest(handler.command, path, headers, body, time.monotonic())
        is_post = handler.command == "POST"
        with self._lock:
            self._requests.append(recorded)
            chat = is_post and path == CHAT_PATH
            refusal = openai_schema.refusal(body or {}, self._refused) if chat else None
            scripted = refusal is None and is_post and path == CHAT_PATH and self._script
            behaviour = self._script.popleft() if scripted else None
            responder, wake, dimensions = self._responder, self._wake, self.embedding_dimensions
        if refusal is not None:
            _send(handler, 400, wire.error_body(400, refusal))
        elif is_post and path == CHAT_PATH:
            self._perform(handler, recorded, behaviour, responder, wake)
        elif is_post and path == EMBEDDINGS_PATH:
            _send(handler, 200, wire.embeddings(body or {}, dimensions))
        else:
            message = f"Unknown request URL: {handler.command} {path}."
            _send(handler, 404, wire.error_body(404, message))

    def _perform(
        self,
        handler: _Handler,
        recorded: RecordedRequest,
        behaviour: Behaviour | None,
        responder: Responder,
        wake: threading.Event,
    ) -> None:
        match behaviour:
            case None:
                try:
                    text = responder(recorded)
                except Exception as exc:  # a broken responder is a test bug: say so, no retry
                    error = wire.error_body(500, f"fake responder raised {exc!r}")
                    _send(handler, 500, error, {"x-should-retry": "false"})
                    return
                if not isinstance(text, str):  # a responder may answer with a behaviour
                    self._perform(handler, recorded, text, responder, wake)
                    return
                if _refused_sources(handler, recorded, text):
                    return
                self._answer(handler, recorded, text, wake)
            case Reply(text=text, headers=headers, strict=strict):
                if strict and _refused_sources(handler, recorded, text):
                    return
                self._answer(handler, recorded, text, wake, dict(headers))
            case Stream():
                _send_stream(handler, recorded.body or {}, behaviour, wake)
            case ToolCall(calls=calls):
                body = recorded.body or {}
                if not {name for name, _ in calls} <= wire.offered_tools(body):
                    self._perform(handler, recorded, None, responder, wake)  # not offered
                elif body.get("stream"):
                    _send_tool_stream(handler, body, calls)
                else:
                    _send(handler, 200, wire.tool_call_completion(body, calls))
            case Fail(status=status, message=message, retry_after=retry_after):
                headers = (
                    {} if retry_after is None else {"retry-after-ms": f"{retry_after * 1e3:g}"}
                )
                if behaviour.echo_headers:
                    message += " Request headers: " + json.dumps(recorded.headers)
                _send(handler, status, wire.error_body(status, message), headers)
            case Delay(seconds=seconds, then=then):
                wake.wait(seconds)  # reset() sets it, so a stale delay never outlives its test
                self._perform(handler, recorded, then, responder, wake)
            case MalformedBody(body=raw, content_type=content_type):
                _send(handler, 200, raw, content_type=content_type)
            case DropConnection():
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)

    def _answer(
        self,
        handler: _Handler,
        recorded: RecordedRequest,
        text: str,
        wake: threading.Event,
        headers: dict[str, str] | None = None,
    ) -> None:
        """A completion, or its SSE chunks when the request asked for `stream: true`."""
        body = recorded.body or {}
        if body.get("stream"):
            _send_stream(handler, body, Stream(parts=wire.split_words(text)), wake)
        else:
            _send(handler, 200, wire.chat_completion(body, text), headers)


def _refused_sources(handler: _Handler, recorded: RecordedRequest, text: str) -> bool:
    """Refuse (500, no retry) an extraction answer citing ids its prompt does not show, a
    consolidation answer reporting a contradiction between ids its prompt does not list,
    or an answer outside the request's JSON schema or without the `ANSWERS:` trailer its
    prompt asks for (a strict server cannot produce one; `Reply(strict=False)` sends it)."""
    unknown = wire.unknown_sources(recorded, text) + wire.unknown_contradiction_ids(recorded, text)
    outside = openai_schema.answer_problems(recorded.body or {}, text)
    if not outside and (trailer := wire.trailer_problems(recorded, text)):
        outside = [f"the ANSWERS: trailer the prompt asks for: {trailer}"]
    if outside and not unknown:
        error = wire.error_body(500, f"fake answer does not follow the schema: {outside}")
        _send(handler, 500, error, {"x-should-retry": "false"})
        return True
    if unknown:
        error = wire.error_body(500, f"fake answer cites ids not in the prompt: {unknown}")
        _send(handler, 500, error, {"x-should-retry": "false"})
    return bool(unknown)


def _send_tool_stream(
    handler: _Handler, body: dict[str, Any], calls: tuple[tuple[str, str], ...]
) -> None:
    """Tool calls as a streamed answer sends them: one delta per call, then `tool_calls`."""
    completion_id = f"chatcmpl-fake{time.monotonic_ns()}"
    handler.close_connection = True
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.send_header("Connection", "close")
    handler.end_headers()
    first = {"role": "assistant", "content": None}
    handler.wfile.write(wire.sse_event(wire.chat_chunk(body, completion_id, first, None)))
    for index, call in enumerate(wire.tool_calls(calls)):
        delta = {"tool_calls": [{"index": index, **call}]}
        handler.wfile.write(wire.sse_event(wire.chat_chunk(body, completion_id, delta, None)))
    done = wire.chat_chunk(body, completion_id, {}, "tool_calls")
    handler.wfile.write(wire.sse_event(done) + wire.sse_event("[DONE]"))
    handler.wfile.flush()


def _send_stream(
    handler: _Handler, body: dict[str, Any], stream: Stream, wake: threading.Event
) -> None:
    """Server-sent events, each written and flushed on its own; the connection closes after."""
    completion_id = f"chatcmpl-fake{time.monotonic_ns()}"
    handler.close_connection = True
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.send_header("x-request-id", f"req_fake{time.monotonic_ns()}")
        handler.end_headers()
        first = {"role": "assistant", "content": ""}
        handler.wfile.write(wire.sse_event(wire.chat_chunk(body, completion_id, first, None)))
        for index, part in enumerate(stream.parts):
            if stream.release is not None and index == stream.hold_after:
                stream.release.wait(stream.hold_timeout)
            if stream.chunk_delay:
                wake.wait(stream.chunk_delay)
            delta = {"content": part}
            handler.wfile.write(wire.sse_event(wire.chat_chunk(body, completion_id, delta, None)))
            handler.wfile.flush()
        handler.wfile.write(wire.sse_event(wire.chat_chunk(body, completion_id, {}, "stop")))
        handler.wfile.write(wire.sse_event("[DONE]"))
        handler.wfile.flush()
    except OSError:  # the client hung up mid-stream
        pass
    finally:
        if stream.finished is not None:
            stream.finished.set()


def _send(
    handler: _Handler,
    status: int,
    payload: Any,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> None:
    """Write one response; `payload` is raw bytes or something JSON-serialisable."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("x-request-id", f"req_fake{time.monotonic_ns()}")
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
    except OSError:  # the client gave up (a timeout) and closed the socket first
        handler.close_connection = True


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """One server per run: a stable port, so a client the app caches stays valid."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def fake_openai(
    fake_openai_server: FakeOpenAI, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeOpenAI]:
    """The fake, reset, with the app configured (Django settings and env) to call it."""
    fake = fake_openai_server
    fake.reset()
    negotiation.forget()  # one base URL for the whole run: no test inherits a step down
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    settings.OPENAI_BASE_URL = fake.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 2
    settings.MEMORY_LLM_MAX_RETRIES = 2
    yield fake
    fake.reset()
    negotiation.forget()
