"""Large requests take turns: a bulkhead so one caller's big payloads cannot take every core.

A request whose body is over `MEMORY_LARGE_REQUEST_BYTES` (an ingest of a few maximum-size
messages, a batch of observations, an import) is read, then takes one of
`MEMORY_LARGE_REQUEST_SLOTS` slots shared by every web process of the host: an exclusive
`flock` on one of that many files under `MEMORY_DATA_DIR`. The kernel drops a lock when
its holder dies, so a killed worker never keeps a slot. Small requests (reads, chat-sized
messages) never wait, and neither does a request in a single-threaded worker (a wait
there would hold back every request queued behind it on that worker). A large request
that finds no slot within `MEMORY_LARGE_REQUEST_WAIT_SECONDS` answers 503 with
`Retry-After`, in the API's envelope.

Why: on a small host the store and the web workers share a few cores. Two clients
sending 128 KB ingests back to back kept both cores busy, and every other caller's
context call waited behind them (p95 five times its quiet figure). With one slot, the
large requests use about one core between them and everyone else keeps the rest.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, UnreadablePostError
from django.template.loader import render_to_string

from memory_admin.api.errors import error_response
from memory_admin.api.middleware import is_api_request
from memory_admin.runtime.connection import close_connection

POLL_SECONDS = 0.005


def _slot_files(directory: Path, slots: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return [directory / f"large-request-{n}.lock" for n in range(slots)]


def _gated(size: int) -> bool:
    """Whether `size` bytes of work must take a slot (the gate is on and the work large)."""
    return settings.MEMORY_LARGE_REQUEST_SLOTS >= 1 and size > settings.MEMORY_LARGE_REQUEST_BYTES


def _host_slot(wait_seconds: float) -> AbstractContextManager[bool]:
    """A slot of this deployment's host: the configured count, under `MEMORY_DATA_DIR`."""
    directory = Path(settings.MEMORY_DATA_DIR) / "slots"
    return host_slot(directory, settings.MEMORY_LARGE_REQUEST_SLOTS, wait_seconds)


@contextmanager
def host_slot(directory: Path, slots: int, wait_seconds: float) -> Iterator[bool]:
    """One of `slots` host-wide slots, waited for up to `wait_seconds`: yields whether one
    was taken (and holds it until the block ends)."""
    files = _slot_files(directory, slots)
    deadline = time.monotonic() + wait_seconds
    held = _take_one(files)
    while held is None and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        held = _take_one(files)
    if held is None:
        yield False
        return
    try:
        yield True
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        os.close(held)


def _take_one(files: list[Path]) -> int | None:
    """The descriptor of the first free slot file, now locked; None when all are taken."""
    for path in files:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return fd
    return None


@contextmanager
def large_job_slot(size: int) -> Iterator[None]:
    """A background job's large write (`streams.memory.large_work`) takes a slot like a large
    request does; when none frees within the wait it goes ahead anyway (a job is never
    failed for being patient)."""
    if not _gated(size):
        yield
        return
    with _host_slot(settings.MEMORY_LARGE_REQUEST_WAIT_SECONDS):
        yield


def _size(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0  # Django answers a malformed length itself


class LargeRequestGateMiddleware:
    """Large requests wait for a host-wide slot once their body has been read.

    The body is read first: a client that sends it slowly holds its own thread (for at
    most the server's read timeout; a buffering proxy in front holds it instead, see
    docs/deploy.md), never a slot that other large requests wait for.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        size = _size(request)
        if not _gated(size):
            if 0 < size <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
                # Read here too: a body cut off (the worker's request deadline, a stall)
                # is a 400 in the envelope, not an UnreadablePostError in a view (500).
                try:
                    request.body  # noqa: B018
                except UnreadablePostError:
                    return _unreadable(request)
            return self.get_response(request)
        if size <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:  # larger ones are refused unread
            try:
                request.body  # noqa: B018 (read now, kept by Django for the view)
            except UnreadablePostError:
                return _unreadable(request)
        if not request.META.get("wsgi.multithread", False):
            # A single-threaded worker (gunicorn's sync class) waiting for a slot would hold
            # back every request behind it: it takes a free slot or goes ahead without one.
            with _host_slot(0):
                return self.get_response(request)
        with _host_slot(settings.MEMORY_LARGE_REQUEST_WAIT_SECONDS) as taken:
            if taken:
                return self.get_response(request)
        return _busy(request)


def _unreadable(request: HttpRequest) -> HttpResponse:
    """The client stopped sending its body (or sent it too slowly): nothing to serve."""
    close_connection(request)
    message = "the request body could not be read: the client stopped sending it or was too slow"
    if is_api_request(request):
        return error_response(400, code="body_unreadable", message=message)
    return HttpResponse(message, status=400, content_type="text/plain")


def _busy(request: HttpRequest) -> HttpResponse:
    retry_after = str(settings.MEMORY_STORE_RETRY_AFTER_SECONDS)
    message = "the server is busy with other large requests; retry shortly"
    if is_api_request(request):
        response = error_response(503, code="busy", message=message)
    else:
        body = render_to_string("busy.html", {"retry_after": retry_after})
        response = HttpResponse(body, status=503)
    response["Retry-After"] = retry_after
    return response
