"""gunicorn with the repo's config, spoken to over raw sockets: the answers gunicorn
writes itself (a header block too large) and the app's early refusals (a body too large)
are the API's JSON envelope, a connection about to close says so (issue 30: F10, F11),
and slow or stalled clients hold neither a large-request slot nor a thread for long (F4)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_admin.runtime.embedded_store import _free_port
from tests.eventually import eventually
from tests.http_client import HttpClient
from tests.test_production import ROOT, manage, production_env

LARGE = 4_000  # MEMORY_LARGE_REQUEST_BYTES here: bodies over it take the one slot
READ_TIMEOUT = 2  # GUNICORN_READ_TIMEOUT here


@dataclass
class Served:
    port: int
    key: str
    log: Path


@pytest.fixture(scope="module")
def served(embedded_mongo, tmp_path_factory) -> Iterator[Served]:
    """gunicorn started the production way (`gunicorn memory_admin.wsgi`, the repo's
    gunicorn.conf.py), one worker, the large-request gate at one slot and no wait."""
    data_dir = tmp_path_factory.mktemp("http-edges")
    env = production_env(data_dir)
    env.update(
        MEMORY_LARGE_REQUEST_BYTES=str(LARGE),
        MEMORY_LARGE_REQUEST_SLOTS="1",
        MEMORY_LARGE_REQUEST_WAIT_SECONDS="0",
        GUNICORN_READ_TIMEOUT=str(READ_TIMEOUT),
    )
    done = manage(env, "migrate", "--noinput", "-v0")
    assert done.returncode == 0, done.stderr
    created = manage(env, "create_api_key", "--name", "edges")
    assert created.returncode == 0, created.stderr
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,
        env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "1"},
        stdout=subprocess.DEVNULL,
        stderr=open(data_dir / "gunicorn.log", "wb"),  # noqa: SIM115
    )
    try:
        HttpClient(f"http://127.0.0.1:{port}").wait_until_up("/api/v1/health", within=60)
        yield Served(port, created.stdout.strip().splitlines()[-1], data_dir / "gunicorn.log")
    finally:
        server.terminate()
        server.wait(30)


@pytest.fixture(scope="module")
def gunicorn_port(served: Served) -> int:
    return served.port


class Answer:
    def __init__(self, raw: bytes) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }

    def json(self) -> dict:
        return json.loads(self.body)


def read_answer(sock: socket.socket) -> Answer:
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {raw!r}"
        raw += chunk
    answer = Answer(raw)
    if answer.headers.get("transfer-encoding") == "chunked":
        while not answer.body.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            assert chunk, "closed mid-body"
            answer.body += chunk
        answer.body = _unchunked(answer.body)
        return answer
    length = int(answer.headers.get("content-length", "0"))
    while len(answer.body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed mid-body"
        answer.body += chunk
    return answer


def _unchunked(raw: bytes) -> bytes:
    body = b""
    while True:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return body
        body, raw = body + raw[:size], raw[size + 2 :]


def exchange(port: int, request: bytes, *, then: bytes = b"") -> tuple[Answer, bool]:
    """Send `request` (and `then`, if the server still reads), read one answer; whether the
    server closed the connection after it."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(request)
        if then:
            with contextlib.suppress(OSError):  # the server may stop reading: it has answered
                sock.sendall(then)
        answer = read_answer(sock)
        try:
            closed = sock.recv(1) == b""
        except ConnectionResetError:
            closed = True
        except TimeoutError:
            closed = False
        return answer, closed


def assert_envelope(answer: Answer, status: int, code: str) -> dict:
    assert answer.status == status, (answer.headers, answer.body[:300])
    assert answer.headers["content-type"].startswith("application/json"), answer.body[:300]
    error = answer.json()["error"]
    assert error["code"] == code and error["message"], error
    return error


def test_a_header_block_too_large_is_a_431_in_the_envelope_and_the_connection_closes(
    gunicorn_port,
):
    request = (
        b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + b"X-Padding: "
        + b"a" * 10_000
        + b"\r\n\r\n"
    )
    answer, closed = exchange(gunicorn_port, request)
    assert_envelope(answer, 431, "request_header_fields_too_large")
    assert answer.headers["connection"] == "close" and closed
    many = b"".join(b"X-H%d: v\r\n" % n for n in range(150))
    answer, closed = exchange(gunicorn_port, b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert_envelope(answer, 431, "request_header_fields_too_large")
    assert answer.headers["connection"] == "close" and closed


def test_a_malformed_request_line_is_a_400_in_the_envelope(gunicorn_port):
    answer, closed = exchange(gunicorn_port, b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_envelope(answer, 400, "bad_request")
    assert answer.headers["connection"] == "close" and closed


def test_a_body_too_large_is_a_413_that_says_it_closes_and_does(gunicorn_port):
    size = 2 * 1024 * 1024
    request = (
        b"POST /api/v1/agents/a1/sessions/s1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"X-Forwarded-Proto: https\r\nAuthorization: Bearer nope\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % size
    )
    answer, closed = exchange(gunicorn_port, request, then=b"x" * 65_536)
    assert_envelope(answer, 413, "payload_too_large")
    assert answer.headers["connection"] == "close"
    assert closed


def test_a_normal_answer_keeps_the_connection_alive(gunicorn_port):
    request = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", gunicorn_port), timeout=15) as sock:
        for _ in range(2):  # the same connection serves a second request
            sock.sendall(request)
            answer = read_answer(sock)
            assert answer.status == 200 and answer.headers["connection"] == "keep-alive"


def ingest_request(key: str, session: str, content: str) -> tuple[bytes, bytes]:
    """The head and body of an ingest whose body is over the gate's size."""
    body = json.dumps(
        {"user_id": "u1", "messages": [{"id": "m1", "role": "user", "content": content}]}
    ).encode()
    head = (
        f"POST /api/v1/agents/a1/sessions/{session}/messages HTTP/1.1\r\n"
        "Host: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head, body


def test_a_slow_body_holds_no_slot_so_other_large_requests_are_served(served: Served):
    head, body = ingest_request(served.key, "s-slow", "slow " * 1_000)
    assert len(body) > LARGE
    with socket.create_connection(("127.0.0.1", served.port), timeout=15) as slow:
        slow.sendall(head + body[:100])  # then nothing for a while: the body is slow
        time.sleep(0.5)  # its headers are in: the gate has seen it
        fast_head, fast_body = ingest_request(served.key, "s-fast", "fast " * 1_000)
        with socket.create_connection(("127.0.0.1", served.port), timeout=15) as fast:
            fast.sendall(fast_head + fast_body)
            answer = read_answer(fast)
        assert answer.status == 202, answer.body  # not 503 busy: the slow one holds no slot
        slow.sendall(body[100:])
        assert read_answer(slow).status == 202  # and it is served once its body is in


def test_a_body_that_stalls_is_answered_400_after_the_read_timeout(served: Served):
    head, body = ingest_request(served.key, "s-stalled", "stalled " * 1_000)
    with socket.create_connection(("127.0.0.1", served.port), timeout=15) as stalled:
        stalled.sendall(head + body[:100])  # and never the rest
        answer = read_answer(stalled)
        assert_envelope(answer, 400, "body_unreadable")
        assert answer.headers["connection"] == "close"
        assert stalled.recv(1) == b""


def test_headers_that_stall_do_not_hold_a_thread_past_the_read_timeout(served: Served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=15) as stalled:
        stalled.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert stalled.recv(1) == b""  # the server gave up on it and closed
    log = eventually(served.log.read_text, until=lambda text: "stalled mid-request" in text)
    assert f"a client stalled mid-request for {READ_TIMEOUT}s: connection closed" in log
    assert "TimeoutError" not in log  # one line, not a traceback


def test_a_431_arrives_whole_even_when_the_client_was_still_sending(gunicorn_port):
    """A guard: closing over unread bytes must not reset the answer away."""
    request = (
        b"POST /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + b"X-Padding: "
        + b"a" * 10_000
        + b"\r\nContent-Length: 300000\r\n\r\n"
    )
    answer, closed = exchange(gunicorn_port, request, then=b"b" * 300_000)
    assert_envelope(answer, 431, "request_header_fields_too_large")
    assert closed
