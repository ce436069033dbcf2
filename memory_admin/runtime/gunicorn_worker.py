"""gunicorn's threaded worker, with its own answers in the API's envelope and honest closes.

`gunicorn.conf.py` names `EnvelopeThreadWorker` as its `worker_class`. Four differences
from `gthread`:

- **A request is read whole before a thread sees it** (issue 44). The worker's event
  loop reads each request's header block and body (up to `BUFFER_MAX_BODY`; a larger
  one the app refuses unread, 413) off the threads, like the buffering proxy does, and
  only then hands it to a thread. A whole-request deadline (`GUNICORN_REQUEST_DEADLINE`
  seconds, default 30, from the accept, or on a kept-alive connection from the next
  request's first byte) bounds a slow but steady client;
  a client that stalls `GUNICORN_READ_TIMEOUT` seconds is cut as before. 24 clients
  sending a body at 200 bytes every 5 s had taken every thread (0 of 3 probes
  answered); now they cost a buffer each, and the probes are served
  (`python -m benchmarks.slow_clients`). The proxy (deploy/nginx/) stays the advice.

- Every read from (and write to) a client's socket gives up after
  `GUNICORN_READ_TIMEOUT` seconds (default 10) without progress. gthread waits for
  a request's first bytes off its threads, but then reads the rest of the headers
  and the body with no timeout at all: a client sending its headers or body a byte
  at a time held a thread for as long as it liked (24 of them took every thread of
  a host for 44 s). The timeout is per read, so it bounds a stalled client, not a
  slow but steady one: the buffering proxy in front (deploy/nginx/, docs/deploy.md)
  bounds those.

- The errors gunicorn answers itself, before the app sees a request (a header block
  too large: 431; a malformed request line or header: 400), are JSON in the API's
  error envelope with `Connection: close`, not gunicorn's HTML page.
- A response the app marks with `close_connection(request)` goes out with
  `Connection: close`, and the connection is then closed. The app marks its early
  refusals of a request whose body it will not read (413): gunicorn would otherwise
  promise keep-alive, fail to drain the unread body and close anyway.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from gunicorn import http, util
from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import TConn, ThreadWorker

from memory_admin.runtime.connection import CLOSE_KEY

MAX_MESSAGE = 200
READ_TIMEOUT_SECONDS = float(os.environ.get("GUNICORN_READ_TIMEOUT", "") or 10)
REQUEST_DEADLINE_SECONDS = float(os.environ.get("GUNICORN_REQUEST_DEADLINE", "") or 30)
BUFFER_MAX_HEAD = 64 * 1024  # past this without a blank line: the thread answers 431
BUFFER_MAX_BODY = 1024 * 1024 + 1  # the app's body limit; over it, refused unread (413)
EXPIRED_READ_SECONDS = 0.01  # a request past its deadline: the thread's read fails at once


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's `util.write_error`, answering in the envelope instead of an HTML page."""
    code = reason.lower().replace(" ", "_").replace("-", "_") or "error"
    message = f"{reason}: {mesg}" if mesg else reason
    body = json.dumps(
        {"error": {"code": code, "message": message[:MAX_MESSAGE], "details": None}}
    ).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def closing(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The WSGI app, with a response whose request asked for it sent as the last one."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if environ.get(CLOSE_KEY):
                response = getattr(start_response, "__self__", None)  # gunicorn's Response
                if response is not None and hasattr(response, "force_close"):
                    response.force_close()
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return wrapped


class TimedConn(TConn):
    """A client connection whose socket reads and writes time out (`READ_TIMEOUT_SECONDS`)."""

    expired = False  # set by the buffering loop: the request missed its deadline

    def init(self) -> None:
        # The worker thread calls this before each request, right after making the socket
        # blocking again (which clears any timeout): the timeout is set for every request.
        super().init()
        self.sock.settimeout(EXPIRED_READ_SECONDS if self.expired else READ_TIMEOUT_SECONDS)
        self.expired = False


class StalledClients(logging.Filter):
    """gthread logs a socket timeout as an error with its traceback; a stalled client is
    routine (and a flood of them would flood the log): one info line each instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], TimeoutError):
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = "a client stalled mid-request for %gs: connection closed"
            record.args = (READ_TIMEOUT_SECONDS,)
        return True


def request_complete(buffer: bytes | bytearray) -> bool:
    """Whether `buffer` holds a whole request (or enough that a thread answers it at
    once: a head too large, a body over the limit, a length that is not a number)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return len(buffer) > BUFFER_MAX_HEAD
    length, chunked = 0, False
    for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return True
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    body = len(buffer) - end - 4
    if chunked:
        return buffer.endswith(b"0\r\n\r\n") or body > BUFFER_MAX_BODY
    return length > BUFFER_MAX_BODY or body >= length


def _expects_continue(buffer: bytes | bytearray) -> bool:
    end = buffer.find(b"\r\n\r\n")
    return end >= 0 and b"\r\nexpect: 100-continue" in bytes(buffer[:end]).lower()


class UnbufferedThreadWorker(ThreadWorker):
    """The worker without the event-loop buffering: a request is read on its thread.
    Kept for `benchmarks/slow_clients.py` (the "before" figure), not for production."""

    wsgi: Any  # the application, set by gunicorn's load_wsgi (gunicorn has no types)

    def enqueue_req(self, conn: TConn) -> None:
        conn.__class__ = TimedConn  # made by gthread's accept(); only `init` differs
        super().enqueue_req(conn)

    def init_process(self) -> None:
        # gunicorn's error answers all go through `util.write_error` (workers/base.py).
        util.write_error = write_json_error
        self.log.error_log.addFilter(StalledClients())
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = closing(self.wsgi)


class EnvelopeThreadWorker(UnbufferedThreadWorker):
    """Each request read whole on the event loop, under a deadline, before a thread."""

    def init_process(self) -> None:
        self.buffering: set[TConn] = set()
        super().init_process()

    def enqueue_req(self, conn: TConn) -> None:
        conn.__class__ = TimedConn
        if self.cfg.is_ssl or negotiation.prior_knowledge_allowed(self.cfg, conn.client):
            ThreadWorker.enqueue_req(self, conn)  # TLS or h2c: read on the thread as before
            return
        held = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        now = time.monotonic()
        conn.prebuffer = bytearray(held)
        conn.deadline = now + REQUEST_DEADLINE_SECONDS
        conn.progress = now
        conn.continued = False
        if held and request_complete(conn.prebuffer):
            self._hand_over(conn)
            return
        conn.sock.setblocking(False)
        self.buffering.add(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))

    def _readable(self, conn: TConn, _sock: Any) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client went away before its request was whole
            self._drop(conn)
            return
        conn.prebuffer += data
        conn.progress = time.monotonic()
        if request_complete(conn.prebuffer):
            self._hand_over(conn)
        elif not conn.continued and _expects_continue(conn.prebuffer):
            conn.continued = True  # the client waits for this before sending its body
            try:
                conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            except OSError:
                self._drop(conn)

    def _unregister(self, conn: TConn) -> None:
        self.buffering.discard(conn)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)

    def _drop(self, conn: TConn) -> None:
        self._unregister(conn)
        self.nr_conns -= 1
        conn.close()

    def _hand_over(self, conn: TConn, *, expired: bool = False) -> None:
        """To a thread, with the bytes read so far put back in front of the socket."""
        self._unregister(conn)
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(bytes(conn.prebuffer))
        conn.prebuffer = bytearray()
        conn.data_ready = True
        conn.expired = expired
        ThreadWorker.enqueue_req(self, conn)

    def murder_pending(self) -> None:
        """Also: a request past its deadline, or stalled past the read timeout, goes to
        a thread marked expired: its read fails at once, and it is answered (400) or
        closed as a stalled client always was."""
        super().murder_pending()
        now = time.monotonic()
        for conn in list(self.buffering):
            if now > conn.deadline or now - conn.progress > READ_TIMEOUT_SECONDS:
                self._hand_over(conn, expired=True)
