"""Slow clients with gunicorn alone (issue 44): a request is read whole on the worker's
event loop before a thread sees it, so clients sending a body slowly but steadily (never
stalling long enough for the per-read timeout) hold no thread, other clients are served
meanwhile, and a whole-request deadline cuts the slow ones off."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from memory_admin.runtime.embedded_store import _free_port
from tests.http_client import HttpClient
from tests.test_production import ROOT, manage, production_env

THREADS = 2
SLOW = 6  # three times the threads
DEADLINE = 6  # GUNICORN_REQUEST_DEADLINE here
READ_TIMEOUT = 4  # GUNICORN_READ_TIMEOUT here: the slow clients send every second
KEY: list[str] = []  # the module's API key, once the server is up
HEALTH = (
    b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
    b"Connection: close\r\n\r\n"
)


@pytest.fixture(scope="module")
def port(embedded_mongo, tmp_path_factory) -> Iterator[int]:
    data_dir = tmp_path_factory.mktemp("slow-clients")
    env = production_env(data_dir)
    env.update(GUNICORN_READ_TIMEOUT=str(READ_TIMEOUT), GUNICORN_REQUEST_DEADLINE=str(DEADLINE))
    done = manage(env, "migrate", "--noinput", "-v0")
    assert done.returncode == 0, done.stderr
    created = manage(env, "create_api_key", "--name", "slow")
    assert created.returncode == 0, created.stderr
    KEY.append(created.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,
        env={
            **env,
            "GUNICORN_BIND": f"127.0.0.1:{port}",
            "WEB_CONCURRENCY": "1",
            "GUNICORN_THREADS": str(THREADS),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        HttpClient(f"http://127.0.0.1:{port}").wait_until_up("/api/v1/health", within=60)
        yield port
    finally:
        server.terminate()
        server.wait(30)


def _slow_start(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        b"POST /api/v1/agents/a1/sessions/s/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"X-Forwarded-Proto: https\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n" % KEY[0].encode()
    )
    return sock


def _health(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(HEALTH)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_slow_bodies_hold_no_thread_and_others_are_served(port):
    slow = [_slow_start(port) for _ in range(SLOW)]
    stop = threading.Event()

    def trickle() -> None:  # 10 bytes a second to each: never a stall
        while not stop.wait(1.0):
            for sock in slow:
                with contextlib.suppress(OSError):
                    sock.sendall(b" " * 10)

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(1.5)  # every slow client is mid-body
        answers = [_health(port) for _ in range(3)]
        # Answered while every slow client is still mid-body (none has sent 1000 bytes).
        assert all(a.startswith(b"HTTP/1.1 200") for a in answers), answers
    finally:
        stop.set()
        sender.join(5)
        for sock in slow:
            sock.close()


def test_a_slow_but_steady_client_is_cut_at_the_deadline(port):
    """1,000 bytes at 10 a second would take 100 s; the deadline ends it, never the
    per-read timeout (it never stalls). The answer: closed, or an error answer."""
    sock = _slow_start(port)
    sent = 0
    try:
        while sent < 1000:
            try:
                sock.sendall(b" " * 10)
            except OSError:
                break  # closed by the server
            sent += 10
            sock.settimeout(1.0)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            assert data == b"" or data.startswith(b"HTTP/1.1 4"), data
            break
    finally:
        sock.close()
    assert sent < 1000, sent  # cut off before the client was done
