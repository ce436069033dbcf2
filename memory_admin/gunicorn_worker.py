"""gunicorn's threaded worker, with its own answers in the API's envelope and honest closes.

`gunicorn.conf.py` names this class as its `worker_class`. Three differences from `gthread`:

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

import json
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import TConn, ThreadWorker

from memory_admin.connection import CLOSE_KEY

MAX_MESSAGE = 200
READ_TIMEOUT_SECONDS = float(os.environ.get("GUNICORN_READ_TIMEOUT", "") or 10)


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

    def init(self) -> None:
        # The worker thread calls this before each request, right after making the socket
        # blocking again (which clears any timeout): the timeout is set for every request.
        super().init()
        self.sock.settimeout(READ_TIMEOUT_SECONDS)


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


class EnvelopeThreadWorker(ThreadWorker):
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
