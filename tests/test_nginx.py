"""The shipped nginx config (deploy/nginx/) in front of gunicorn, both on loopback ports:
slow clients meet nginx, and the app's few threads stay free (issue 30: F4).

Without nginx, 24 clients sending their headers slowly took every gunicorn thread and
the service answered nobody for 44 s. nginx reads each request whole before gunicorn
sees it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_admin.runtime.embedded_store import _free_port
from tests.http_client import HttpClient
from tests.services import NGINX_PATH, needs_nginx
from tests.test_production import ROOT, manage, production_env

pytestmark = [pytest.mark.nginx, needs_nginx]

SNIPPET = ROOT / "deploy" / "nginx" / "memory-admin-proxy.conf"
SLOW_CLIENTS = 24


def nginx_conf(prefix: Path, listen: int, upstream: int) -> str:
    """A minimal nginx.conf around the shipped server snippet, all state under `prefix`."""
    temp = "\n".join(
        f"  {name}_temp_path {prefix / name};"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
{temp}
  upstream memory_admin {{ server 127.0.0.1:{upstream}; keepalive 8; }}
  server {{
    listen 127.0.0.1:{listen};
    server_name _;
    include {SNIPPET};
  }}
}}
"""


@pytest.fixture(scope="module")
def behind_nginx(embedded_mongo, tmp_path_factory) -> Iterator[tuple[str, str]]:
    """(nginx's URL, gunicorn's URL): gunicorn with one worker of two threads."""
    data_dir = tmp_path_factory.mktemp("nginx-app")
    env = production_env(data_dir)
    env["DJANGO_SECURE_SSL_REDIRECT"] = "false"  # plain http on loopback, no TLS here
    assert manage(env, "migrate", "--noinput", "-v0").returncode == 0
    app_port, proxy_port = _free_port(), _free_port()
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,
        env={
            **env,
            "GUNICORN_BIND": f"127.0.0.1:{app_port}",
            "WEB_CONCURRENCY": "1",
            "GUNICORN_THREADS": "2",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    prefix = tmp_path_factory.mktemp("nginx")
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_conf(prefix, proxy_port, app_port))
    checked = subprocess.run(
        [NGINX_PATH, "-t", "-p", str(prefix), "-c", str(conf)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen(
        [NGINX_PATH, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proxy, app = f"http://127.0.0.1:{proxy_port}", f"http://127.0.0.1:{app_port}"
    try:
        HttpClient(app).wait_until_up("/api/v1/health", within=60)
        HttpClient(proxy).wait_until_up("/api/v1/health", within=30)
        yield proxy, app
    finally:
        nginx.terminate()
        gunicorn.terminate()
        nginx.wait(30)
        gunicorn.wait(30)


def slow_header_clients(url: str, count: int) -> list[socket.socket]:
    """Clients that have sent the start of their headers and are still sending."""
    port = int(url.rsplit(":", 1)[1])
    clients = []
    for n in range(count):
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        client.sendall(f"GET /api/v1/health?slow={n} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
        clients.append(client)
    return clients


def test_slow_header_clients_do_not_block_a_normal_request(behind_nginx):
    proxy, _ = behind_nginx
    clients = slow_header_clients(proxy, SLOW_CLIENTS)
    try:
        for round_ in range(3):  # they keep trickling, well within nginx's header timeout
            for client in clients:
                client.sendall(f"X-Trickle-{round_}: 1\r\n".encode())
            answer = HttpClient(proxy, timeout=10).get("/api/v1/health")
            assert answer.status_code == 200, answer.text
            assert answer.json()["status"] == "ok"
            time.sleep(0.3)
        # Still connected, still unanswered: nginx holds them, not gunicorn's two threads.
        for client in clients:
            client.setblocking(False)
            with pytest.raises(BlockingIOError):
                client.recv(1)
    finally:
        for client in clients:
            client.close()


def test_a_slow_body_reaches_gunicorn_only_once_it_is_whole(behind_nginx):
    proxy, _ = behind_nginx
    port = int(proxy.rsplit(":", 1)[1])
    body = b'{"user_id": "u1", "message": "hello"}'
    slow = []
    for _ in range(SLOW_CLIENTS):
        client = socket.create_connection(("127.0.0.1", port), timeout=10)
        client.sendall(
            b"POST /api/v1/agents/a1/context HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:5]
        )
        slow.append(client)
    try:
        assert HttpClient(proxy, timeout=10).get("/api/v1/health").status_code == 200
        for client in slow:
            client.sendall(body[5:])
        for client in slow:  # each is answered once whole: 401, it sent no key
            assert client.recv(4096).startswith(b"HTTP/1.1 401")
    finally:
        for client in slow:
            client.close()


def test_nginx_refuses_a_huge_body_in_the_api_envelope(behind_nginx):
    proxy, _ = behind_nginx
    port = int(proxy.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(
            b"POST /api/v1/agents/a1/context HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 5000000\r\n\r\n"
        )
        raw = b""
        while b"}" not in raw:
            chunk = client.recv(4096)
            if not chunk:
                break
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), raw[:300]
    assert b"Content-Type: application/json" in head
    assert b'"code": "payload_too_large"' in body
