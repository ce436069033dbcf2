"""The sign-in lockout through the shipped nginx config (issue 44): clients on their own
loopback addresses (127.0.0.2 the admin, 127.0.0.3 a stranger) sign in through nginx,
which passes each one's address on in X-Forwarded-For; the app trusts it from nginx
alone (MEMORY_TRUSTED_PROXIES=127.0.0.1). The stranger's wrong passwords lock the
account out for the stranger only."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import httpx2 as httpx
import pytest

from memory_admin.runtime.embedded_store import _free_port
from tests.http_client import HttpClient
from tests.services import NGINX_PATH, needs_nginx
from tests.test_nginx import nginx_conf
from tests.test_production import ROOT, manage, production_env

pytestmark = [pytest.mark.nginx, needs_nginx]

PASSWORD = "a long and correct passphrase"
ADMIN_HOME, STRANGER = "127.0.0.2", "127.0.0.3"


@pytest.fixture(scope="module")
def proxy(embedded_mongo, tmp_path_factory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("lockout-app")
    env = production_env(data_dir)
    env.update(DJANGO_SECURE_SSL_REDIRECT="false", MEMORY_TRUSTED_PROXIES="127.0.0.1")
    for args in (("migrate", "--noinput", "-v0"), ("collectstatic", "--noinput", "-v0")):
        done = manage(env, *args)
        assert done.returncode == 0, done.stderr
    made = manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model as m;"
        f"m().objects.create_superuser('ada', 'ada@example.com', {PASSWORD!r})",
    )
    assert made.returncode == 0, made.stderr
    app_port, proxy_port = _free_port(), _free_port()
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,
        env={**env, "GUNICORN_BIND": f"127.0.0.1:{app_port}", "WEB_CONCURRENCY": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    prefix = tmp_path_factory.mktemp("lockout-nginx")
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_conf(prefix, proxy_port, app_port))
    nginx = subprocess.Popen(
        [NGINX_PATH, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{proxy_port}"
    try:
        HttpClient(f"http://127.0.0.1:{app_port}").wait_until_up("/api/v1/health", within=60)
        HttpClient(url).wait_until_up("/api/v1/health", within=30)
        yield url
    finally:
        nginx.terminate()
        gunicorn.terminate()
        nginx.wait(30)
        gunicorn.wait(30)


def sign_in(url: str, source: str, password: str, forwarded_for: str | None = None) -> int:
    """A browser-like sign-in from `source` (the login page, its CSRF token, the POST)."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(base_url=url, transport=transport, timeout=30) as client:
        page = client.get("/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
        assert token, page.text[:500]
        # The cookie is `Secure` (DEBUG off), which a client keeps off plain http: sent
        # by hand, as a browser would over the TLS this test leaves out.
        headers = {"Referer": f"{url}/login/", "Cookie": f"csrftoken={page.cookies['csrftoken']}"}
        if forwarded_for:
            headers["X-Forwarded-For"] = forwarded_for
        answer = client.post(
            "/login/",
            data={
                "username": "ada",
                "password": password,
                "csrfmiddlewaretoken": token.group(1).decode(),
            },
            headers=headers,
        )
        return answer.status_code


def test_a_stranger_through_nginx_cannot_lock_the_admin_out(proxy):
    for _ in range(5):
        sign_in(proxy, STRANGER, "wrong", forwarded_for=ADMIN_HOME)  # and claims her address
    assert sign_in(proxy, STRANGER, PASSWORD) == 429
    assert sign_in(proxy, ADMIN_HOME, PASSWORD) == 302
